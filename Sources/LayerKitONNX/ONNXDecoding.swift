import LayerKitCore
// Decoding of ONNX's protobuf messages (field numbers from onnx.proto, IR
// version 14). Fields LayerKit does not use are skipped; fields it cannot
// honour (sparse or segmented tensors, type attributes) are refused by name.

extension ONNXModel {
    /// Decodes a `ModelProto` and checks the IR version, the opset and that
    /// there is a graph.
    init(decoding reader: inout ProtobufReader) throws {
        var irVersion: Int64 = 0
        var opsets: [(domain: String, version: Int)] = []
        var producerName = "", producerVersion = ""
        var graph: ONNXGraph?
        while let field = try reader.nextField() {
            switch field.number {
            case 1: irVersion = try reader.int64(field, "ir_version")
            case 2: producerName = try reader.string(field, "producer_name")
            case 3: producerVersion = try reader.string(field, "producer_version")
            case 7:
                guard graph == nil else { throw reader.error("a second graph", at: field.offset) }
                var sub = try reader.message(field, "graph", type: "GraphProto")
                graph = try ONNXGraph(decoding: &sub)
            case 8:
                var sub = try reader.message(field, "opset_import", type: "OperatorSetIdProto")
                opsets.append(try Self.opset(decoding: &sub))
            default: try reader.skip(field)
            }
        }
        let source = reader.source
        guard Self.supportedIRVersions.contains(Int(irVersion)) else {
            throw LayerKitError.invalidModel("\(source): IR version \(irVersion) is not supported (LayerKit reads "
                + "\(Self.supportedIRVersions.lowerBound) to \(Self.supportedIRVersions.upperBound)); "
                + "re-export the model with an older ONNX exporter")
        }
        guard let graph else { throw LayerKitError.invalidModel("\(source): the model has no graph") }
        self.init(irVersion: Int(irVersion), opsetImports: opsets, producerName: producerName,
                  producerVersion: producerVersion, graph: graph)
        guard let opset = defaultOpset else {
            // A model of other domains alone (ai.onnx.ml, as skl2onnx writes a lone tree) needs none, as in onnxruntime.
            if let node = graph.nodes.first(where: \.isStandard) {
                throw LayerKitError.invalidModel("\(source): node '\(node.name)' (\(node.opType)) is a default-domain op, "
                                                 + "but the model imports no default-domain (\"\" or ai.onnx) opset")
            }
            return
        }
        guard (1...Self.maxOpset).contains(opset) else {
            throw LayerKitError.invalidModel("\(source): opset \(opset) is not supported (LayerKit reads 1 to "
                + "\(Self.maxOpset)); convert the model with onnx.version_converter")
        }
    }

    private static func opset(decoding reader: inout ProtobufReader) throws -> (domain: String, version: Int) {
        var domain = "", version: Int64 = 0
        while let field = try reader.nextField() {
            switch field.number {
            case 1: domain = try reader.string(field, "domain")
            case 2: version = try reader.int64(field, "version")
            default: try reader.skip(field)
            }
        }
        return (domain, Int(version))
    }
}

extension ONNXGraph {
    init(decoding reader: inout ProtobufReader) throws {
        self.init(name: "", nodes: [], initializers: [:], initializerNames: [], inputs: [], outputs: [], valueInfo: [])
        while let field = try reader.nextField() {
            switch field.number {
            case 1:
                var sub = try reader.message(field, "node", type: "NodeProto")
                nodes.append(try ONNXNode(decoding: &sub))
            case 2: name = try reader.string(field, "name")
            case 5:
                var sub = try reader.message(field, "initializer", type: "TensorProto")
                let tensor = try ONNXTensor(decoding: &sub)
                guard initializers.updateValue(tensor, forKey: tensor.name) == nil else {
                    throw reader.error("initializer '\(tensor.name)' given twice", at: field.offset)
                }
                initializerNames.append(tensor.name)
            case 11: inputs.append(try valueInfo(field, "input", &reader))
            case 12: outputs.append(try valueInfo(field, "output", &reader))
            case 13: valueInfo.append(try valueInfo(field, "value_info", &reader))
            case 15: throw reader.error("sparse initializers are not supported", at: field.offset)
            default: try reader.skip(field)
            }
        }
    }

    private func valueInfo(_ field: ProtobufReader.Field, _ name: String,
                           _ reader: inout ProtobufReader) throws -> ONNXValueInfo {
        var sub = try reader.message(field, name, type: "ValueInfoProto")
        return try ONNXValueInfo(decoding: &sub)
    }
}

extension ONNXNode {
    init(decoding reader: inout ProtobufReader) throws {
        self.init(name: "", opType: "", domain: "", inputs: [], outputs: [], attributes: [:])
        var refused: (name: String, kind: String)?
        while let field = try reader.nextField() {
            switch field.number {
            case 1: inputs.append(try reader.string(field, "input"))
            case 2: outputs.append(try reader.string(field, "output"))
            case 3: name = try reader.string(field, "name")
            case 4: opType = try reader.string(field, "op_type")
            case 7: domain = try reader.string(field, "domain")
            case 5:
                var sub = try reader.message(field, "attribute", type: "AttributeProto")
                let (attribute, value) = try ONNXAttribute.decode(&sub)
                guard attributes[attribute] == nil, refused?.name != attribute else {
                    throw reader.error("attribute '\(attribute)' given twice", at: field.offset)
                }
                switch value {
                case .success(let value): attributes[attribute] = value
                case .failure(let kind): refused = refused ?? (attribute, kind.text)
                }
            default: try reader.skip(field)
            }
        }
        guard !opType.isEmpty else { throw reader.error("a node without op_type", at: reader.offset) }
        if let refused {
            throw LayerKitError.invalidModel("\(reader.source): \(label): attribute '\(refused.name)' is "
                + "\(refused.kind), which LayerKit does not support")
        }
    }
}

/// Why an attribute's value was not decoded.
struct RefusedAttribute: Error {
    let text: String
}

/// AttributeProto fields LayerKit skips, and the AttributeType each stands for:
/// tensors, tp, type_protos, sparse_tensor, sparse_tensors.
private let refusedFieldTypes: [Int: Int32] = [10: 9, 15: 14, 22: 11, 23: 12]

extension ONNXAttribute {
    /// Decodes an `AttributeProto`: its name, and its value or the kind of
    /// value LayerKit refuses (sparse tensors, type protos, tensor lists).
    /// A graph (`g`, `graphs`) decodes as the main graph does; its nesting
    /// (a Loop's body holding an If's branches) is bounded by the reader's
    /// depth limit, and its size by the file's.
    static func decode(_ reader: inout ProtobufReader) throws -> (String, Result<ONNXAttribute, RefusedAttribute>) {
        var name = "", type: Int32 = 0
        var f: Float?, i: Int64?, s: String?, t: ONNXTensor?
        var floats: [Float] = [], ints: [Int64] = [], strings: [String] = []
        var g: ONNXGraph?, graphs: [ONNXGraph] = [], tp: ValueForm?
        var refused: Set<Int32> = []  // the AttributeType codes of fields present but not decoded
        var isReference = false
        while let field = try reader.nextField() {
            switch field.number {
            case 1: name = try reader.string(field, "name")
            case 2: f = try reader.float(field, "f")
            case 3: i = try reader.int64(field, "i")
            case 4: s = try reader.string(field, "s")
            case 5:
                var sub = try reader.message(field, "t", type: "TensorProto")
                t = try ONNXTensor(decoding: &sub)
            case 6:
                var sub = try reader.message(field, "g", type: "GraphProto")
                g = try ONNXGraph(decoding: &sub)
            case 11:
                var sub = try reader.message(field, "graphs", type: "GraphProto")
                graphs.append(try ONNXGraph(decoding: &sub))
            case 7: try reader.appendFloats(field, "floats", to: &floats)
            case 8: try reader.appendInt64s(field, "ints", to: &ints)
            case 9: strings.append(try reader.string(field, "strings"))
            case 14:
                var sub = try reader.message(field, "tp", type: "TypeProto")
                tp = try ONNXValueInfo.form(decoding: &sub)
            case 20: type = try reader.int32(field, "type")
            case 21: isReference = true; try reader.skip(field)
            default:
                if let code = refusedFieldTypes[field.number] { refused.insert(code) }
                try reader.skip(field)
            }
        }
        guard !name.isEmpty else { throw reader.error("an attribute without a name", at: reader.offset) }
        if isReference { return (name, .failure(RefusedAttribute(text: "a reference to a function attribute"))) }
        // Before IR version 3 the type field was optional: then exactly one value field tells the type.
        if type == 0 {
            let present: [Int32] = [f.map { _ in 1 }, i.map { _ in 2 }, s.map { _ in 3 }, t.map { _ in 4 },
                                    g.map { _ in 5 }, floats.isEmpty ? nil : 6, ints.isEmpty ? nil : 7,
                                    strings.isEmpty ? nil : 8, graphs.isEmpty ? nil : 10, tp.map { _ in 13 }]
                .compactMap { $0 } + refused
            guard present.count == 1 else {
                throw reader.error("attribute '\(name)' has \(present.isEmpty ? "no value" : "several values") "
                                   + "and no type", at: reader.offset)
            }
            type = present[0]
        }
        switch type {
        case 1: return (name, .success(.float(f ?? 0)))
        case 2: return (name, .success(.int(Int(i ?? 0))))
        case 3: return (name, .success(.string(s ?? "")))
        case 4:
            guard let t else { throw reader.error("attribute '\(name)' of type TENSOR has no tensor", at: reader.offset) }
            return (name, .success(.tensor(t)))
        case 6: return (name, .success(.floats(floats)))
        case 7: return (name, .success(.ints(ints.map { Int($0) })))
        case 8: return (name, .success(.strings(strings)))
        case 5:
            guard let g else { throw reader.error("attribute '\(name)' of type GRAPH has no graph", at: reader.offset) }
            return (name, .success(.graph(g)))
        case 10: return (name, .success(.graphs(graphs)))
        case 9: return (name, .failure(RefusedAttribute(text: "a list of tensors")))
        case 11, 12: return (name, .failure(RefusedAttribute(text: "a sparse tensor")))
        case 13:
            guard let tp else { throw reader.error("attribute '\(name)' of type TYPE_PROTO has no type", at: reader.offset) }
            return (name, .success(.type(tp)))
        case 14: return (name, .failure(RefusedAttribute(text: "a list of types")))
        default: throw reader.error("attribute '\(name)' has unknown type \(type)", at: reader.offset)
        }
    }
}

extension ONNXTensor {
    /// Decodes a `TensorProto`, refusing segmented and negative-sized
    /// tensors. External data is recorded (`externalData`), read later by
    /// `ONNXModel.loadExternalData(from:)`.
    init(decoding reader: inout ProtobufReader) throws {
        self.init(name: "", dims: [], dataType: ONNXDataType(rawValue: 0))
        var dims: [Int64] = [], external = false, unsigned: [Int64] = []
        var entries: [String: String] = [:]
        while let field = try reader.nextField() {
            switch field.number {
            case 1: try reader.appendInt64s(field, "dims", to: &dims)
            case 6: stringData.append(Array(try reader.bytes(field, "string_data")))
            case 11: try reader.appendInt64s(field, "uint64_data", to: &unsigned)
            case 2: dataType = ONNXDataType(rawValue: Int(try reader.int32(field, "data_type")))
            case 3: throw reader.error("segmented tensors are not supported", at: field.offset)
            case 4: try reader.appendFloats(field, "float_data", to: &floatData)
            case 5: try reader.appendInt32s(field, "int32_data", to: &int32Data)
            case 7: try reader.appendInt64s(field, "int64_data", to: &int64Data)
            case 8: name = try reader.string(field, "name")
            case 9: rawData = Array(try reader.bytes(field, "raw_data"))
            case 10: try reader.appendDoubles(field, "double_data", to: &doubleData)
            case 13:
                var entry = try reader.message(field, "external_data", type: "StringStringEntryProto")
                var key = "", value = ""
                while let part = try entry.nextField() {
                    switch part.number {
                    case 1: key = try entry.string(part, "key")
                    case 2: value = try entry.string(part, "value")
                    default: try entry.skip(part)
                    }
                }
                entries[key] = value
            case 14:
                let location = try reader.int32(field, "data_location")
                external = external || location == 1
            default: try reader.skip(field)
            }
        }
        if external {
            guard let location = entries["location"], !location.isEmpty else {
                throw reader.error("tensor '\(name)' keeps its data outside the file but names no location", at: reader.offset)
            }
            func number(_ key: String) throws -> Int? {
                guard let text = entries[key] else { return nil }
                guard let value = Int(text), value >= 0 else {
                    throw reader.error("tensor '\(name)': external data \(key) '\(text)' is not a byte count", at: reader.offset)
                }
                return value
            }
            externalData = ExternalData(location: location, offset: try number("offset") ?? 0, length: try number("length"))
        }
        guard dims.allSatisfy({ $0 >= 0 }) else {
            throw reader.error("tensor '\(name)' has negative dims \(dims)", at: reader.offset)
        }
        self.dims = dims.map { Int($0) }
        uint64Data = unsigned.map { UInt64(bitPattern: $0) }
        // The dims must describe no more elements than the file holds: every
        // later use (shapes, Flatten's products, allocations) trusts them.
        // External data is checked the same way once it is read.
        guard externalData == nil else {
            guard (try? elementCount()) != nil else {
                throw reader.error("tensor '\(name)' has dims \(dims) that give no element count", at: reader.offset)
            }
            return
        }
        let held = heldElements()
        guard let count = try? elementCount(), count <= held else {
            throw reader.error("tensor '\(name)' has dims \(dims) but holds data for \(held) elements", at: reader.offset)
        }
    }

    /// The most elements the tensor's data fields can hold: `raw_data` at
    /// the type's width, plus every typed field's values.
    private func heldElements() -> Int {
        let packed = [21, 22, 23].contains(dataType.rawValue) ? 2 : [25, 26].contains(dataType.rawValue) ? 4 : 1
        let typed = floatData.count + int32Data.count * packed + int64Data.count + doubleData.count + uint64Data.count
            + stringData.count
        guard let raw = rawData else { return typed }
        // Bits per element by ONNX code; unknown codes at the narrowest (2).
        let bits: [Int: Int] = [1: 32, 2: 8, 3: 8, 4: 16, 5: 16, 6: 32, 7: 64, 9: 8, 10: 16, 11: 64, 12: 32, 13: 64,
                                14: 64, 15: 128, 16: 16, 17: 8, 18: 8, 19: 8, 20: 8, 21: 4, 22: 4, 23: 4, 24: 8,
                                25: 2, 26: 2, 27: 6, 28: 6]
        return typed + raw.count * 8 / (bits[dataType.rawValue] ?? 2)
    }
}

extension ONNXValueInfo {
    /// Decodes a `ValueInfoProto`: a tensor, or a sequence, optional or map
    /// (`form`); opaque and sparse values are refused.
    init(decoding reader: inout ProtobufReader) throws {
        self.init(name: "", elementType: nil, dims: nil)
        while let field = try reader.nextField() {
            switch field.number {
            case 1: name = try reader.string(field, "name")
            case 2:
                var sub = try reader.message(field, "type", type: "TypeProto")
                let form = try decodeType(&sub)
                if case .tensor = form {} else { (self.form, elementType, dims) = (form, nil, nil) }
            default: try reader.skip(field)
            }
        }
    }

    /// The form a `TypeProto` gives (an attribute's `tp`).
    static func form(decoding reader: inout ProtobufReader) throws -> ValueForm {
        var info = ONNXValueInfo(name: "", elementType: nil, dims: nil)
        return try info.decodeType(&reader)
    }

    /// Reads a `TypeProto`: a tensor type into `elementType` and `dims`,
    /// and the value's form (nested types recurse, bounded by the reader's
    /// depth limit).
    private mutating func decodeType(_ reader: inout ProtobufReader) throws -> ValueForm {
        var form = ValueForm.tensor(nil)
        while let field = try reader.nextField() {
            switch field.number {
            case 1:
                var sub = try reader.message(field, "tensor_type", type: "TypeProto.Tensor")
                try decodeTensorType(&sub)
                form = .tensor(elementType.flatMap { ElementType(rawValue: $0.rawValue) })
            case 4: form = .sequence(try Self.decodeInner("sequence", field, &reader).value)
            case 9: form = .optional(try Self.decodeInner("optional", field, &reader).value)
            case 5:
                let (key, value) = try Self.decodeInner("map", field, &reader)
                guard let key, key == .string || key == .int64 else {
                    throw reader.error("value '\(name)' is a map keyed by \(key?.description ?? "an unknown type"); "
                                       + "LayerKit reads maps keyed by string or int64", at: reader.offset)
                }
                form = .map(key: key, value: value)
            case 7, 8:
                throw reader.error("value '\(name)' is \(field.number == 7 ? "an opaque value" : "a sparse tensor"); "
                                   + "LayerKit reads tensors, sequences, optionals and maps", at: reader.offset)
            default: try reader.skip(field)
            }
        }
        return form
    }

    /// Reads a sequence's or optional's `elem_type`, or a map's `key_type`
    /// and `value_type`.
    private static func decodeInner(_ kind: String, _ field: ProtobufReader.Field,
                                    _ outer: inout ProtobufReader) throws -> (key: ElementType?, value: ValueForm) {
        var reader = try outer.message(field, kind + "_type", type: "TypeProto." + kind.capitalized)
        var (key, value): (ElementType?, ValueForm) = (nil, .tensor(nil))
        while let field = try reader.nextField() {
            // Sequence and Optional hold elem_type = 1, Map key_type = 1 (an int) and value_type = 2.
            if kind == "map", field.number == 1 {
                key = ElementType(rawValue: Int(try reader.int32(field, "key_type")))
            } else if field.number == (kind == "map" ? 2 : 1) {
                var sub = try reader.message(field, kind == "map" ? "value_type" : "elem_type", type: "TypeProto")
                var inner = ONNXValueInfo(name: "", elementType: nil, dims: nil)
                value = try inner.decodeType(&sub)
            } else {
                try reader.skip(field)
            }
        }
        return (key, value)
    }

    private mutating func decodeTensorType(_ reader: inout ProtobufReader) throws {
        while let field = try reader.nextField() {
            switch field.number {
            case 1:
                let code = try reader.int32(field, "elem_type")
                elementType = code == 0 ? nil : ONNXDataType(rawValue: Int(code))
            case 2:
                var shape = try reader.message(field, "shape", type: "TensorShapeProto")
                dims = []
                while let dim = try shape.nextField() {
                    guard dim.number == 1 else { try shape.skip(dim); continue }
                    var sub = try shape.message(dim, "dim", type: "TensorShapeProto.Dimension")
                    dims?.append(try Self.dimension(&sub))
                }
            default: try reader.skip(field)
            }
        }
    }

    private static func dimension(_ reader: inout ProtobufReader) throws -> ONNXDimension {
        var dimension = ONNXDimension.unknown
        while let field = try reader.nextField() {
            switch field.number {
            case 1:
                let value = try reader.int64(field, "dim_value")
                guard value >= 0 else { throw reader.error("negative dimension \(value)", at: field.offset) }
                dimension = .value(Int(value))
            case 2: dimension = .symbol(try reader.string(field, "dim_param"))
            default: try reader.skip(field)
            }
        }
        return dimension
    }
}
