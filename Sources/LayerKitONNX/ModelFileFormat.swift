import LayerKitCore
import Foundation

/// What a model file is, judged by its content (its extension decides only
/// when the content cannot): the formats LayerKit reads, and those it
/// recognizes to name in its refusal.
public enum ModelFileFormat: Sendable, Equatable {
    /// An ONNX `ModelProto`.
    case onnx
    /// A Core ML `Model` protobuf (`.mlmodel`).
    case coreML
    /// A TensorFlow Lite FlatBuffer ("TFL3" at bytes 4 to 8).
    case tensorFlowLite

    /// The `Model` fields of Core ML's `Type` oneof start at 200; ONNX's
    /// `ModelProto` has none there, and Core ML none at 7 (graph) or 8
    /// (opset_import). Both begin with field 1 as a varint
    /// (specificationVersion, ir_version) and field 2 length-delimited
    /// (description, producer_name), so the first fields alone cannot tell.
    private static let firstCoreMLModelType = 200

    /// How much of a file the top-level fields are looked for in: ONNX's
    /// graph tag and Core ML's model type follow a few small fields.
    private static let sniffedBytes = 1 << 20

    /// The format of a file's bytes; `name` is its file name, whose
    /// `.mlmodel` extension decides when the top-level fields do not.
    public static func of(_ data: Data, name: String) -> ModelFileFormat {
        let bytes = [UInt8](data.prefix(sniffedBytes))
        if bytes.count >= 8, Array(bytes[4..<8]) == Array("TFL3".utf8) { return .tensorFlowLite }
        var reader = ProtobufReader(bytes: bytes, message: "Model", source: name)
        // Top-level field numbers up to the first that cannot be read.
        while let field = try? reader.nextField() {
            if field.number >= firstCoreMLModelType { return .coreML }
            if field.number == 7 || field.number == 8 { return .onnx }
            guard (try? reader.skip(field)) != nil else { break }
        }
        return name.lowercased().hasSuffix(".mlmodel") ? .coreML : .onnx
    }

    /// Reads the model file at `url` as an ONNX model: an ONNX file as it
    /// is (with its external data), a Core ML neural network translated
    /// (`CoreMLModel.onnxModel()`), a TensorFlow Lite model translated
    /// (`TFLiteModel.onnxModel()`, Docs/TFLITE.md). Another format, or a Core ML ML Program
    /// package (a `.mlpackage` folder), is refused, named as what it is.
    public static func read(_ url: URL) throws -> ONNXModel {
        let name = url.lastPathComponent
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), isFolder.boolValue,
           name.lowercased().hasSuffix(".mlpackage") {
            throw LayerKitError.invalidModel("\(name) is a Core ML ML Program package, which LayerKit does not read yet")
        }
        let data = try RegularFile.contents(url.path)
        var model = try decode(data, name: name)
        if of(data, name: name) == .onnx { try model.loadExternalData(from: url.deletingLastPathComponent()) }
        return model
    }

    /// Decodes a model's bytes as `read(_:)` does (an ONNX model's external
    /// data is left unread: there is no folder to find it in).
    public static func decode(_ data: Data, name: String) throws -> ONNXModel {
        switch of(data, name: name) {
        case .onnx: return try ONNXModel(data: data, source: name)
        case .coreML: return try CoreMLModel(data: data, source: name).onnxModel()
        case .tensorFlowLite: return try TFLiteModel(data: data, source: name).onnxModel()
        }
    }
}
