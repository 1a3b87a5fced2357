import Foundation
import LayerKitONNX

/// Writes a trained model: a copy of the ONNX file it came from in which
/// only the updated initializers differ
/// (`ONNXModel.replacingInitializers(_:in:source:)`), so weights that were
/// not trained stay bit-identical and stock onnxruntime runs the result;
/// or of the Core ML `.mlmodel` it came from, in which only the updated
/// weights' values differ (`CoreMLModel.replacingWeights(_:in:source:)`:
/// every length and every other byte as it was, float16 weights written
/// back in float16), so coremltools reads it as it read the original.
public enum UpdatedModelFile {
    /// Whether the model file at `path` is a Core ML model (by its content,
    /// as loading decides; by its `.mlmodel` extension when it cannot be
    /// read), which `write` writes back as an `.mlmodel`.
    public static func isCoreML(_ path: String) -> Bool {
        let name = URL(fileURLWithPath: path).lastPathComponent
        guard let data = try? RegularFile.contents(path) else { return name.lowercased().hasSuffix(".mlmodel") }
        return ModelFileFormat.of(data, name: name) == .coreML
    }

    /// Writes the ONNX model (or Core ML model) at `modelPath`, with the FLOAT initializers
    /// named in `updates` replaced by their values, to `outputPath`,
    /// atomically (`AtomicFile`: the path holds its old contents or the
    /// whole new model, never a part).
    ///
    /// Refuses, before writing anything, an output that is the model file
    /// itself or one of its external data files (by identity: links and
    /// `..` do not hide it), and every update
    /// `ONNXModel.replacingInitializers` refuses. Initializers in external
    /// data files are written as references to the same relative locations:
    /// the new model finds them when it is written in the model's folder.
    public static func write(_ updates: [String: Tensor], intoCopyOf modelPath: String,
                             to outputPath: String) throws {
        let data = try RegularFile.contents(modelPath)
        let name = URL(fileURLWithPath: modelPath).lastPathComponent
        // The external data files are inputs too (`ReadFiles`): the new model still reads them.
        let inputs = ModelFileFormat.of(data, name: name) == .coreML ? [modelPath] : ReadFiles([modelPath]).paths
        try write(updates, intoCopyOf: data, source: name, to: outputPath, readingFrom: inputs)
    }

    /// Writes the ONNX model `modelData` (the bytes of a `.onnx` file, or
    /// of a Core ML `.mlmodel`, by content; named `source` in messages)
    /// with `updates` replaced to `outputPath`, atomically, refusing an
    /// output that is one of `inputs` (the model's own file, its data
    /// files) by identity.
    public static func write(_ updates: [String: Tensor], intoCopyOf modelData: Data, source: String,
                             to outputPath: String, readingFrom inputs: [String] = []) throws {
        let updated = ModelFileFormat.of(modelData, name: source) == .coreML
            ? try CoreMLModel.replacingWeights(updates, in: modelData, source: source)
            : try ONNXModel.replacingInitializers(updates, in: modelData, source: source)
        try FileIdentity.refuseOverwrite(of: outputPath, readingFrom: inputs)
        try writeAtomically(updated, to: outputPath)
    }
}
