import LayerKitCore
import Foundation

/// Files that are no model LayerKit reads, named as what they are: a user who
/// passes a picture, an array or a PyTorch checkpoint should read that, not a
/// protobuf reader's complaint about a wire type at byte 0.
extension ModelFileFormat {
    /// The formats LayerKit reads, for the end of every refusal.
    static let readableFormats = "LayerKit reads ONNX (.onnx), Core ML (.mlmodel, .mlpackage) and TensorFlow Lite (.tflite) models"

    /// Refuses `data` (to be read as a protobuf model: ONNX, the format of
    /// last resort, or Core ML) when its first bytes say it is something else: a known non-model file by
    /// its signature, or bytes whose first field no ONNX or Core ML model
    /// begins with.
    static func refuseForeign<Bytes: Collection<UInt8>>(_ data: Bytes, name: String) throws {
        let bytes = [UInt8](data.prefix(16))
        if let kind = foreignKind(bytes, count: data.count) {
            throw LayerKitError.invalidModel("\(name) is \(kind), not a model: \(readableFormats)")
        }
        guard !data.isEmpty else { throw LayerKitError.invalidModel("\(name) is empty, not a model: \(readableFormats)") }
        var reader = ProtobufReader(bytes: [UInt8](data.prefix(16)), message: "Model", source: name)
        guard let first = try? reader.nextField(), Self.beginsAModel(first) else {
            throw LayerKitError.invalidModel("\(name) is not a model file: its first bytes are no ONNX, Core ML or "
                                             + "TensorFlow Lite model's; \(readableFormats)")
        }
    }

    /// Whether a model's top-level message may begin with `field`: one of
    /// ONNX `ModelProto`'s fields or Core ML `Model`'s, with its wire type.
    private static func beginsAModel(_ field: ProtobufReader.Field) -> Bool {
        switch field.number {
        case 1, 10: field.wireType == .varint  // ir_version, specificationVersion; Core ML's isUpdatable
        case 2...8, 14, 20, 25, 26: field.wireType == .lengthDelimited  // ONNX's fields; Core ML's description (2)
        case 200...: field.wireType == .lengthDelimited  // Core ML's model types
        default: false
        }
    }

    /// What `bytes` (a file's first 16 of `count`) are, by their signature;
    /// nil for none LayerKit knows.
    static func foreignKind(_ bytes: [UInt8], count: Int) -> String? {
        func starts(_ magic: [UInt8]) -> Bool { bytes.starts(with: magic) }
        if starts([0x93] + Array("NUMPY".utf8)) { return "a NumPy array (.npy)" }
        if starts([0x89] + Array("PNG".utf8)) { return "a PNG picture" }
        if starts([0xFF, 0xD8, 0xFF]) { return "a JPEG picture" }
        if starts([0x89] + Array("HDF".utf8)) { return "an HDF5 file (a Keras .h5 model: convert it to ONNX or TensorFlow Lite)" }
        if starts(Array("PK".utf8) + [3, 4]) {
            return "a zip archive (PyTorch's .pt and .pth, Keras's .keras and NumPy's .npz are zip archives: "
                + "export the model to ONNX)"
        }
        if starts(Array("GGUF".utf8)) { return "a GGUF file (llama.cpp's)" }
        // Python's pickle protocol 2 to 5: PyTorch's legacy checkpoints, scikit-learn's joblib files.
        if bytes.count >= 2, bytes[0] == 0x80, (2...5).contains(bytes[1]) {
            return "a Python pickle (a PyTorch or scikit-learn object: export the model to ONNX)"
        }
        // safetensors: an 8-byte little-endian header length, then the JSON header.
        if bytes.count > 8, bytes[8] == UInt8(ascii: "{") {
            let length = bytes[0..<8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if length < UInt64(count) { return "a safetensors file (weights without a graph)" }
        }
        return nil
    }
}
