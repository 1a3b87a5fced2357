import LayerKitCore
import Foundation

extension MLProgramModel {
    /// The ONNX opset the translated graph is written in (Gelu is 20's,
    /// and 18 takes the axes of Reduce* and Pad as inputs).
    static let opset = 20

    /// The program as an ONNX model of standard ops, which LayerKit's
    /// importer runs as it runs any ONNX file.
    ///
    /// Values keep MIL's names. Every float type (fp16, fp32) is float32:
    /// an fp16 program's weights are converted and its casts between fp16
    /// and fp32 are identities, so it computes in float32 with the weights it
    /// holds. An op LayerKit does not translate is refused, named with its type.
    public func onnxModel() throws -> ONNXModel {
        var translator = MILTranslator(model: self)
        for input in function.inputs { try translator.addInput(input) }
        for operation in function.operations {
            do {
                try translator.add(operation)
            } catch LayerKitError.invalidModel(let message) where !message.hasPrefix(source) {
                throw LayerKitError.invalidModel("\(source): \(operation.label): \(message)")
            }
        }
        var graph = translator.graph.graph
        graph.outputs = try function.outputs.map { name in
            guard let type = translator.types[name], translator.computed.contains(name) else {
                throw LayerKitError.invalidModel("\(source): output '\(name)' is not computed by any op")
            }
            return ONNXValueInfo(name: name, elementType: MILTranslator.onnxType(type.dataType), dims: nil)
        }
        return ONNXModel(irVersion: 8, opsetImports: [("", Self.opset)],
                         producerName: "Core ML ML Program (specification version \(specificationVersion), opset "
                             + "\(function.opset)), translated to ONNX ops",
                         producerVersion: "", graph: graph)
    }
}

/// The ONNX graph made from a MIL block, op by op. `const` ops are kept as
/// values (parameters such as strides are read from them) and written as
/// initializers only where an op takes them as tensors.
struct MILTranslator {
    var graph: CoreMLGraphBuilder
    let model: MLProgramModel
    /// Every value's type: inputs, op outputs.
    var types: [String: MILTensorType] = [:]
    /// The values of `const` ops, by name.
    var constants: [String: MILConstant] = [:]
    /// The values the graph computes (inputs and translated ops' outputs).
    var computed: Set<String> = []
    /// The weights files read so far, by path.
    private var blobFiles: [String: MILBlobFile] = [:]

    init(model: MLProgramModel) {
        self.model = model
        graph = CoreMLGraphBuilder(source: model.source)
    }

    /// The ONNX element type of a MIL type: every float type is float32.
    static func onnxType(_ type: MILDataType) -> ONNXDataType {
        switch type {
        case .int32: .int32
        case .int64: .int64
        case .bool: .bool
        default: .float
        }
    }

    /// A graph input; unknown dimensions become symbols named after the input and axis.
    mutating func addInput(_ input: MILNamedType) throws {
        guard input.type.dataType.isFloat || input.type.dataType == .int32 else {
            throw LayerKitError.invalidModel("\(model.source): input '\(input.name)' is \(input.type.dataType); "
                                             + "LayerKit reads float and int32 inputs")
        }
        let dims = input.type.dims.enumerated().map { axis, dim in
            dim.map(ONNXDimension.value) ?? .symbol("\(input.name)_\(axis)")
        }
        graph.graph.inputs.append(ONNXValueInfo(name: input.name, elementType: Self.onnxType(input.type.dataType),
                                                dims: dims))
        types[input.name] = input.type
        computed.insert(input.name)
    }

    // MARK: Values

    /// The first argument of parameter `name`, or nil when the op omits it.
    func argument(_ op: MILOperation, _ name: String) -> MILArgument? { op.inputs[name]?.first }

    /// The constant value of parameter `name` (an immediate value or a
    /// `const` op's output), nil when it is omitted; a computed value is an error.
    mutating func constant(_ op: MILOperation, _ name: String) throws -> MILConstant? {
        switch argument(op, name) {
        case nil: return nil
        case .value(let value)?: return try decode(value, "parameter '\(name)'")
        case .name(let value)?:
            guard let constant = constants[value] else {
                throw LayerKitError.invalidModel("parameter '\(name)' is the computed value '\(value)'; LayerKit "
                                                 + "reads it only as a constant")
            }
            return constant
        }
    }

    /// Parameter `name` as integers (`default` when omitted).
    mutating func ints(_ op: MILOperation, _ name: String, default value: [Int]? = nil) throws -> [Int]? {
        guard let constant = try constant(op, name) else { return value }
        guard case .ints(let ints) = constant.data else {
            throw LayerKitError.invalidModel("parameter '\(name)' is not an integer tensor")
        }
        return ints.map { Int(clamping: $0) }
    }

    /// Parameter `name` as one float (`default` when omitted).
    mutating func float(_ op: MILOperation, _ name: String, default value: Float) throws -> Float {
        guard let constant = try constant(op, name) else { return value }
        switch constant.data {
        case .floats(let floats) where floats.count == 1: return floats[0]
        case .ints(let ints) where ints.count == 1: return Float(ints[0])
        default: throw LayerKitError.invalidModel("parameter '\(name)' is not a number")
        }
    }

    /// Parameter `name` as a bool (`default` when omitted).
    mutating func bool(_ op: MILOperation, _ name: String, default value: Bool) throws -> Bool {
        guard let constant = try constant(op, name) else { return value }
        guard case .bools(let bools) = constant.data, bools.count == 1 else {
            throw LayerKitError.invalidModel("parameter '\(name)' is not a bool")
        }
        return bools[0]
    }

    /// Parameter `name` as a string (`default` when omitted).
    mutating func string(_ op: MILOperation, _ name: String, default value: String) throws -> String {
        guard let constant = try constant(op, name) else { return value }
        guard case .strings(let strings) = constant.data, strings.count == 1 else {
            throw LayerKitError.invalidModel("parameter '\(name)' is not a string")
        }
        return strings[0]
    }

    /// Parameter `name` as a graph value: a computed value's name, or a
    /// constant written as an initializer (floats as float32, integers as int64).
    mutating func tensor(_ op: MILOperation, _ name: String) throws -> String {
        guard let argument = argument(op, name) else {
            throw LayerKitError.invalidModel("parameter '\(name)' is missing")
        }
        return try tensor(argument, name: "\(op.outputs.first?.name ?? op.type).\(name)")
    }

    /// Every argument of parameter `name` (a variadic parameter such as concat's `values`), as graph values.
    mutating func tensors(_ op: MILOperation, _ name: String) throws -> [String] {
        try (op.inputs[name] ?? []).enumerated().map { index, argument in
            try tensor(argument, name: "\(op.outputs.first?.name ?? op.type).\(name)\(index)")
        }
    }

    private mutating func tensor(_ argument: MILArgument, name: String) throws -> String {
        switch argument {
        case .name(let value):
            if computed.contains(value) { return value }
            guard let constant = constants[value] else {
                throw LayerKitError.invalidModel("input '\(value)' is not a function input or an earlier op's output")
            }
            return try initializer(value, constant)
        case .value(let value): return try initializer(name, try decode(value, name))
        }
    }

    /// Writes `constant` as an initializer named `name` once.
    mutating func initializer(_ name: String, _ constant: MILConstant) throws -> String {
        guard graph.graph.initializers[name] == nil else { return name }
        let dims = try constant.dims(name)
        switch constant.data {
        case .floats(let floats): return graph.constant(name, dims, floats)
        case .ints(let ints): return graph.constant(name, dims, int64s: ints.map(Int.init))
        default: throw LayerKitError.invalidModel("constant '\(name)' of type \(constant.type.dataType) is not a tensor "
                                                  + "LayerKit computes with")
        }
    }

    /// A value's decoded contents: immediate, or read from its weights file.
    mutating func decode(_ value: MILValue, _ what: String) throws -> MILConstant {
        let data: MILTensorData
        switch value.contents {
        case .immediate(let immediate): data = try Self.normalized(immediate, value.type, what)
        case .blob(let file, let offset):
            let url = try model.blobFileURL(file)
            let blobFile = try blobFiles[url.path] ?? MILBlobFile(
                bytes: RegularFile.bytes(url.path),
                source: (model.source as NSString).deletingLastPathComponent + "/" + file.dropFirst("@model_path/".count))
            blobFiles[url.path] = blobFile
            data = try blobFile.values(at: offset, for: value.type, what)
        }
        let constant = MILConstant(type: value.type, data: data)
        if let count = value.type.count, constant.count != count, !value.type.dims.isEmpty || constant.count != 1 {
            throw LayerKitError.invalidModel("\(what) holds \(constant.count) values where its type has \(count)")
        }
        return constant
    }

    /// Immediate contents as LayerKit computes with them: every float type
    /// as floats (fp16 bytes converted), integer bytes as integers.
    private static func normalized(_ data: MILTensorData, _ type: MILTensorType, _ what: String) throws -> MILTensorData {
        switch data {
        case .doubles(let doubles): return .floats(doubles.map(Float.init))
        case .bytes(let bytes):
            switch type.dataType {
            case .float16:
                guard bytes.count % 2 == 0 else {
                    throw LayerKitError.invalidModel("\(what): an odd number of fp16 bytes (\(bytes.count))")
                }
                return .floats(stride(from: 0, to: bytes.count, by: 2).map {
                    Float(halfBits: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8)
                })
            case .int8: return .ints(bytes.map { Int64(Int8(bitPattern: $0)) })
            case .uint8: return .ints(bytes.map { Int64($0) })
            default: throw LayerKitError.invalidModel("\(what): \(type.dataType) values as bytes, which LayerKit does not read")
            }
        default:
            return data
        }
    }
}

/// A constant's type and elements (floats for every float type).
struct MILConstant: Sendable {
    var type: MILTensorType
    var data: MILTensorData

    var count: Int {
        switch data {
        case .floats(let values): values.count
        case .doubles(let values): values.count
        case .ints(let values): values.count
        case .bools(let values): values.count
        case .strings(let values): values.count
        case .bytes(let values): values.count
        }
    }

    /// Its dimensions, each known.
    func dims(_ name: String) throws -> [Int] {
        try type.dims.map {
            guard let dim = $0 else { throw LayerKitError.invalidModel("constant '\(name)' has an unknown dimension") }
            return dim
        }
    }
}
