import Foundation
import LayerKit
import Testing

/// `layerkit run` on ai.onnx.ml models of strings as a user runs them: the
/// string input from numpy's `.npy` (`<U`n) or a TensorProto `.pb`, string
/// outputs written as `.npy` and `.pb`, against scikit-learn's results or
/// onnxruntime's (`Tests/LayerKitTests/Fixtures/ml-strings`,
/// Scripts/generate_ml_string_fixtures.py).
struct MLStringRunCommandTests {
    static let fixtures = ModelCommandTests.fixtures.deletingLastPathComponent().appendingPathComponent("ml-strings")

    /// The skl2onnx pipeline (OneHotEncoder on string columns, then a
    /// LogisticRegression) from a `<U` `.npy`: labels equal scikit-learn's,
    /// probabilities within 1e-5.
    @Test func runsAStringPipelineFromNumpysUnicodeArray() throws {
        let folder = Self.fixtures.appendingPathComponent("one_hot_logistic")
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        try #require(runner.run(["run", folder.appendingPathComponent("model.onnx").path, "--backend", "cpu",
                                 "--input", "X=" + folder.appendingPathComponent("x.npy").path,
                                 "--output", "label=\(directory)/label.npy",
                                 "--output", "probabilities=\(directory)/probabilities.npy"]) == 0, "\(runner.error)")
        let labels = try TypedTensor(npyFile: "\(directory)/label.npy")
        let expected = try TypedTensor(npyFile: folder.appendingPathComponent("sklearn_label.npy").path)
        #expect(labels.elementType == .int64 && labels.integers() == expected.integers())
        let probabilities = try TypedTensor(npyFile: "\(directory)/probabilities.npy")
        let reference = try TypedTensor(npyFile: folder.appendingPathComponent("sklearn_probabilities.npy").path)
        #expect(probabilities.shape == reference.shape)
        for (p, r) in zip(probabilities.doubles(), reference.doubles()) { #expect(abs(p - r) <= 1e-5, "\(p) vs \(r)") }
    }

    /// int64 to strings (LabelEncoder) and strings to int64 (CategoryMapper):
    /// the input as `.npy` and as `.pb`, the output as `.npy` (`<U`n) and `.pb`.
    @Test(arguments: ["label_encoder_to_strings", "category_mapper_to_ints"])
    func readsAndWritesStringsAsNPYAndTensorProto(_ name: String) throws {
        let folder = Self.fixtures.appendingPathComponent(name)
        let directory = try CommandRunner.scratchDirectory()
        let reference = try TypedTensor(npyFile: folder.appendingPathComponent("onnxruntime_Y.npy").path)
        let input = try TypedTensor(npyFile: folder.appendingPathComponent("x.npy").path)
        try input.writeTensorProto(to: "\(directory)/x.pb", name: "X")
        for (inputFile, outputFile) in [(folder.appendingPathComponent("x.npy").path, "\(directory)/y.npy"),
                                        ("\(directory)/x.pb", "\(directory)/y.pb")] {
            let runner = CommandRunner()
            try #require(runner.run(["run", folder.appendingPathComponent("model.onnx").path, "--backend", "gpu",
                                     "--input", "X=\(inputFile)", "--output", "Y=\(outputFile)"]) == 0, "\(runner.error)")
            let output = outputFile.hasSuffix(".npy") ? try TypedTensor(npyFile: outputFile)
                : try TypedTensor(tensorProto: [UInt8](Data(contentsOf: URL(fileURLWithPath: outputFile))), source: outputFile)
            #expect(output == reference, "\(name) \(outputFile): \(output) \(output.strings) vs \(reference.strings)")
        }
    }

    /// An object array (a pickle) is refused, saying how to save strings.
    @Test func refusesNumpyObjectArrays() throws {
        let folder = Self.fixtures.appendingPathComponent("category_mapper_to_ints")
        let directory = try CommandRunner.scratchDirectory()
        let header = "{'descr': '|O', 'fortran_order': False, 'shape': (5,), }\n"
        let bytes = [0x93] + Array("NUMPY".utf8) + [1, 0, UInt8(header.utf8.count), 0] + Array(header.utf8) + [0x80, 0x04]
        try Data(bytes).write(to: URL(fileURLWithPath: "\(directory)/x.npy"))
        let runner = CommandRunner()
        #expect(runner.run(["run", folder.appendingPathComponent("model.onnx").path, "--backend", "cpu",
                            "--input", "X=\(directory)/x.npy", "--output", "Y=\(directory)/y.npy"]) != 0)
        #expect(runner.error.contains("Python pickles") && runner.error.contains("a.astype(str)"), "\(runner.error)")
    }
}
