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
    /// A Core ML `Model` holding an ML Program (`mlProgram`): a `.mlmodel`
    /// file, or the root model of a `.mlpackage` folder.
    case coreMLProgram
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
    public static func of<Bytes: Collection<UInt8>>(_ data: Bytes, name: String) -> ModelFileFormat {
        let bytes = [UInt8](data.prefix(sniffedBytes))
        if bytes.count >= 8, Array(bytes[4..<8]) == Array("TFL3".utf8) { return .tensorFlowLite }
        var reader = ProtobufReader(bytes: bytes, message: "Model", source: name)
        // Top-level field numbers up to the first that cannot be read.
        while let field = try? reader.nextField() {
            if field.number == MLProgramModel.programField { return .coreMLProgram }
            if field.number >= firstCoreMLModelType { return .coreML }
            if field.number == 7 || field.number == 8 { return .onnx }
            guard (try? reader.skip(field)) != nil else { break }
        }
        return name.lowercased().hasSuffix(".mlmodel") ? .coreML : .onnx
    }

    /// Reads the model file at `url` as an ONNX model: an ONNX file as it
    /// is (with its external data), a Core ML neural network or ML Program
    /// translated (`CoreMLModel.onnxModel()`, `MLProgramModel.onnxModel()`),
    /// a `.mlpackage` folder (or any folder with a `Manifest.json`) as the
    /// ML Program package it is, a TensorFlow Lite model translated
    /// (`TFLiteModel.onnxModel()`, Docs/TFLITE.md). Another file is refused, named as what it is.
    public static func read(_ url: URL) throws -> ONNXModel {
        let name = url.lastPathComponent
        if isPackage(url) { return try MLProgramModel(package: url).onnxModel() }
        // An ONNX file's bytes are decoded in place; the other formats read a `Data`.
        let bytes = try RegularFile.bytes(url.path)
        switch of(bytes, name: name) {
        case .onnx:
            var model = try onnx(bytes, name: name)
            try model.loadExternalData(from: url.deletingLastPathComponent())
            return model
        case .coreMLProgram:
            // Its weights files are named from its folder (`@model_path`).
            let folder = url.deletingLastPathComponent()
            return try MLProgramModel(data: Data(bytes), source: name, modelFolder: folder).onnxModel()
        case .coreML, .tensorFlowLite:
            return try decode(Data(bytes), name: name)
        }
    }

    /// Decodes a model's bytes as `read(_:)` does (an ONNX model's external
    /// data is left unread: there is no folder to find it in).
    public static func decode(_ data: Data, name: String) throws -> ONNXModel {
        switch of(data, name: name) {
        case .onnx:
            return try onnx([UInt8](data), name: name)
        case .coreML:
            try refuseForeign(data, name: name)
            return try CoreMLModel(data: data, source: name).onnxModel()
        case .coreMLProgram: return try MLProgramModel(data: data, source: name).onnxModel()
        case .tensorFlowLite: return try TFLiteModel(data: data, source: name).onnxModel()
        }
    }

    /// An ONNX file's bytes decoded in place, refused first when they are
    /// some other kind of file's.
    private static func onnx(_ bytes: [UInt8], name: String) throws -> ONNXModel {
        try refuseForeign(bytes, name: name)
        return try ONNXModel(bytes: bytes, source: name)
    }

    /// Whether `url` is a Core ML package: a folder named `.mlpackage` or holding a `Manifest.json`.
    public static func isPackage(_ url: URL) -> Bool {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), isFolder.boolValue else {
            return false
        }
        return url.lastPathComponent.lowercased().hasSuffix(".mlpackage")
            || FileManager.default.fileExists(atPath: url.appendingPathComponent("Manifest.json").path)
    }
}
