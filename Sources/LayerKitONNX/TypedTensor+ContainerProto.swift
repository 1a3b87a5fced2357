import LayerKitCore

/// Sequences and optionals in ONNX's own files: a `SequenceProto` of
/// tensors, an `OptionalProto` of a tensor or such a sequence, as the onnx
/// package's tests store their inputs and outputs (`numpy_helper.from_list`,
/// `from_optional`). A proto's tensors carry their types, but an empty
/// sequence or optional does not: the declared `ValueForm` gives it.
extension TypedTensor {
    /// `OptionalProto.DataType` / `SequenceProto.DataType`: what an element is.
    private enum ProtoElement: Int64 { case undefined = 0, tensor = 1, sequence = 3 }

    /// Decodes a serialized `SequenceProto` (for a `.sequence` form) or
    /// `OptionalProto` (an `.optional` one); `source` names the file in errors.
    public init(containerProto data: [UInt8], form: ValueForm, source: String) throws {
        var reader = ProtobufReader(bytes: data, message: "\(form)", source: source)
        self = try TypedTensor.decode(&reader, form: form)
    }

    private static func decode(_ reader: inout ProtobufReader, form: ValueForm) throws -> TypedTensor {
        func refuse(_ field: ProtobufReader.Field, _ what: String) -> LayerKitError {
            reader.error("holds \(what) where \(form) was declared; LayerKit reads sequences of tensors and optionals "
                         + "of a tensor or such a sequence", at: field.offset)
        }
        switch form {
        case .tensor:
            let tensor = try ONNXTensor(decoding: &reader)
            guard !tensor.hasExternalData else { throw reader.error("a tensor keeps its data in an external file", at: 0) }
            return try tensor.typed()
        case .sequence(let inner):
            guard case .tensor = inner else { throw reader.error("\(form): LayerKit reads sequences of tensors", at: 0) }
            var tensors: [TypedTensor] = []
            while let field = try reader.nextField() {
                switch field.number {
                case 3:
                    var sub = try reader.message(field, "tensor_values", type: "TensorProto")
                    tensors.append(try decode(&sub, form: inner))
                case 4, 5, 6, 7: throw refuse(field, ["", "", "", "", "sparse tensors", "sequences", "maps", "optionals"][field.number])
                default: try reader.skip(field)
                }
            }
            do {
                return try TypedTensor(sequence: tensors, elementType: tensors.first?.elementType ?? inner.elementType ?? .float32)
            } catch {
                throw reader.error("\(error)", at: 0)
            }
        case .optional(let inner):
            var (element, value): (Int64, TypedTensor?) = (0, nil)
            while let field = try reader.nextField() {
                switch field.number {
                case 2: element = Int64(try reader.int32(field, "elem_type"))
                case 3, 5:
                    let expected = field.number == 3 ? ProtoElement.tensor : .sequence
                    guard inner.isSequence == (expected == .sequence) else {
                        throw refuse(field, expected == .tensor ? "a tensor" : "a sequence")
                    }
                    var sub = try reader.message(field, field.number == 3 ? "tensor_value" : "sequence_value",
                                                 type: field.number == 3 ? "TensorProto" : "SequenceProto")
                    value = try decode(&sub, form: inner)
                case 4, 6, 7: throw refuse(field, ["", "", "", "", "a sparse tensor", "", "a map", "an optional"][field.number])
                default: try reader.skip(field)
                }
            }
            // elem_type UNDEFINED is the empty optional, as onnx's to_optional reads it.
            let held = element == ProtoElement.undefined.rawValue ? nil : value
            return TypedTensor(container: .optional(held), elementType: held?.elementType ?? inner.elementType ?? .float32)
        case .map:
            throw reader.error("\(form): LayerKit reads no map inputs", at: 0)
        }
    }

    /// The value as a serialized `SequenceProto` (a sequence) or
    /// `OptionalProto` (an optional) named `name`, as onnx's `from_list`
    /// and `from_optional` write them; a tensor is a `TensorProto`. Maps
    /// (ZipMap's) have no such file here: they are written as JSON.
    public func containerProto(name: String) throws -> [UInt8] {
        var writer = ProtobufWriter()
        if !name.isEmpty { writer.string(1, name) }
        switch container {
        case nil: return tensorProto(name: name)
        case .sequence(let tensors)?:
            writer.int64(2, ProtoElement.tensor.rawValue)
            for tensor in tensors { writer.bytes(3, try tensor.containerProto(name: "")) }
        case .optional(let held)?:
            guard let held else {
                writer.int64(2, ProtoElement.undefined.rawValue)
                break
            }
            let isSequence = held.container != nil
            writer.int64(2, (isSequence ? ProtoElement.sequence : .tensor).rawValue)
            writer.bytes(isSequence ? 5 : 3, try held.containerProto(name: ""))
        case .map?:
            throw LayerKitError.unsupported("a map has no protobuf form in LayerKit; write it as .json")
        }
        return writer.bytes
    }
}

extension ValueForm {
    /// Whether this is a sequence.
    var isSequence: Bool {
        if case .sequence = self { return true }
        return false
    }
}
