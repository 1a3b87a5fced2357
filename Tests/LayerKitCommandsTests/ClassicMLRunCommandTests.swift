import Foundation
import LayerKit
import Testing

/// `layerkit run` on scikit-learn models exported by skl2onnx, as a user
/// runs them: `--input X=x.npy --output label=... --output probabilities=...`,
/// one case per family of `Tests/LayerKitTests/Fixtures/classic-ml`, the
/// `.npy` outputs in the model's declared types (int64 or string labels) against
/// scikit-learn's: labels exactly, scores within 1e-5 of max(1, |ref|).
struct ClassicMLRunCommandTests {
    static let fixtures = ModelCommandTests.fixtures.deletingLastPathComponent().appendingPathComponent("classic-ml")

    @Test(arguments: ["trees-gradient_boosting_three", "trees-random_forest_regressor", "svm-svc_rbf_probabilities",
                      "svm-svr_poly", "kmeans-four_clusters", "preprocessing-one_hot_encoder",
                      "labels-logistic_three", "labels-svc_probabilities", "labels-random_forest_three",
                      "labels-gradient_boosting_binary"])
    func runWritesScikitLearnsResults(_ name: String) throws {
        let folder = Self.fixtures.appendingPathComponent(name)
        let model = folder.appendingPathComponent("model.onnx").path
        let outputs = try Model(contentsOf: URL(fileURLWithPath: model), computeUnits: .cpuOnly).outputs.map(\.name)
        let input = try Model(contentsOf: URL(fileURLWithPath: model), computeUnits: .cpuOnly).inputs[0].name
        let directory = try CommandRunner.scratchDirectory()
        var arguments = ["run", model, "--backend", "cpu", "--input", "\(input)=" + folder.appendingPathComponent("x.npy").path]
        for output in outputs { arguments += ["--output", "\(output)=\(directory)/\(output).npy"] }
        let runner = CommandRunner()
        try #require(runner.run(arguments) == 0, "\(runner.error)")
        for output in outputs {
            let written = try TypedTensor(npyFile: "\(directory)/\(output).npy")
            let reference = try TypedTensor(npyFile: folder.appendingPathComponent("sklearn_\(output).npy").path)
            #expect(written.shape == reference.shape, "\(name) \(output)")
            if reference.elementType == .int64 {
                #expect(written.elementType == .int64 && written.integers() == reference.integers(), "\(name) \(output)")
            } else if reference.elementType == .string {
                #expect(written.elementType == .string && written.strings == reference.strings, "\(name) \(output)")
            } else {
                for (y, expected) in zip(written.doubles(), reference.doubles()) {
                    #expect(abs(y - expected) <= 1e-5 * max(1, abs(expected)), "\(name) \(output): \(y) vs \(expected)")
                }
            }
        }
    }
}
