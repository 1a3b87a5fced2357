import Foundation
import LayerKitCore

extension ONNXModel {
    /// The bytes of the ONNX model `data` with the FLOAT initializers named
    /// in `updates` holding new values, and every other byte as it was.
    ///
    /// The file is edited, not re-encoded: ModelProto's fields are copied
    /// byte for byte except the graph (field 7), whose fields are copied
    /// byte for byte except the initializers (field 5) named in `updates`.
    /// Each of those `TensorProto`s is written anew with its name, its dims
    /// (the tensor's shape, which must equal the old dims), data type FLOAT
    /// and the values as little-endian `raw_data`; its `doc_string` and
    /// `metadata_props` are copied. So frozen weights, nodes, metadata and
    /// fields LayerKit does not know stay bit-identical, and onnxruntime
    /// reads the result as it read the input.
    ///
    /// Initializers kept in external data files are copied as they are, as
    /// references: the written model names the same files by the same
    /// relative locations, so it must sit in a folder where they are found
    /// (the input model's, or one the files are copied to). Replacing an
    /// external initializer is refused.
    ///
    /// Throws `LayerKitError.invalidModel` when `data` is not a model
    /// LayerKit reads, and `LayerKitError.invalidParameter` for an update
    /// that names no initializer (with a suggestion when a name is close),
    /// one whose shape differs from the initializer's dims, one that is
    /// not FLOAT, or one stored in an external file. `source` names the
    /// model in messages.
    public static func replacingInitializers(_ updates: [String: Tensor], in data: Data,
                                             source: String = "ONNX model") throws -> Data {
        let model = try ONNXModel(data: data, source: source)
        try checkReplacements(updates, of: model.graph, source: source)
        let bytes = [UInt8](data)
        var reader = ProtobufReader(bytes: bytes, message: "ModelProto", source: source)
        var writer = ProtobufWriter()
        while let field = try reader.nextField() {
            guard field.number == 7 else {
                try reader.skip(field)
                writer.raw(bytes[field.offset..<reader.offset])
                continue
            }
            var graph = try reader.message(field, "graph", type: "GraphProto")
            writer.bytes(7, try replacingInitializers(updates, inGraph: &graph, bytes: bytes))
        }
        return Data(writer.bytes)
    }

    private static func checkReplacements(_ updates: [String: Tensor], of graph: ONNXGraph, source: String) throws {
        for (name, tensor) in updates.sorted(by: { $0.key < $1.key }) {
            guard let original = graph.initializers[name] else {
                throw LayerKitError.invalidParameter("\(source): no initializer is named '\(name)'"
                    + NameSuggestion.hint(for: name, among: graph.initializerNames) + "; the updated model cannot be written")
            }
            guard original.dataType == .float else {
                throw LayerKitError.invalidParameter("\(source): initializer '\(name)' is \(original.dataType), not FLOAT; "
                    + "only FLOAT initializers can be replaced")
            }
            guard !original.hasExternalData else {
                throw LayerKitError.invalidParameter("\(source): initializer '\(name)' is stored in an external data file; "
                    + "LayerKit replaces only initializers held inside the .onnx file")
            }
            guard original.dims == tensor.shape else {
                throw LayerKitError.invalidParameter("\(source): initializer '\(name)' has dims \(original.dims) but its "
                    + "update has shape \(tensor.shape)")
            }
        }
    }

    /// The `GraphProto` read by `reader` with the initializers in `updates`
    /// replaced and every other field's bytes copied.
    private static func replacingInitializers(_ updates: [String: Tensor], inGraph reader: inout ProtobufReader,
                                              bytes: [UInt8]) throws -> [UInt8] {
        var writer = ProtobufWriter()
        while let field = try reader.nextField() {
            guard field.number == 5 else {
                try reader.skip(field)
                writer.raw(bytes[field.offset..<reader.offset])
                continue
            }
            var proto = try reader.message(field, "initializer", type: "TensorProto")
            let kept = proto  // a second reader over the same TensorProto, for the fields that are copied
            let name = try ONNXTensor(decoding: &proto).name
            guard let update = updates[name] else {
                writer.raw(bytes[field.offset..<reader.offset])
                continue
            }
            writer.bytes(5, try tensorProto(name: name, values: update, keeping: kept, bytes: bytes))
        }
        return writer.bytes
    }

    /// TensorProto fields kept from the replaced tensor: doc_string and metadata_props.
    private static let keptTensorFields: Set<Int> = [12, 16]

    /// A FLOAT `TensorProto` named `name` holding `values` as raw data, in
    /// field-number order as protobuf serializers write it, followed by the
    /// fields of `original` that describe the tensor rather than hold it.
    private static func tensorProto(name: String, values: Tensor, keeping original: ProtobufReader,
                                    bytes: [UInt8]) throws -> [UInt8] {
        var writer = ProtobufWriter()
        for dim in values.shape { writer.int64(1, Int64(dim)) }
        writer.int64(2, Int64(ONNXDataType.float.rawValue))
        writer.string(8, name)
        let raw = values.elements.map { $0.bitPattern.littleEndian }.withUnsafeBytes { Array($0) }
        writer.bytes(9, raw)
        var reader = original
        while let field = try reader.nextField() {
            try reader.skip(field)
            if keptTensorFields.contains(field.number) { writer.raw(bytes[field.offset..<reader.offset]) }
        }
        return writer.bytes
    }
}
