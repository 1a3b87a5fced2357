import Foundation
import LayerKit
import Testing

/// `layerkit run` on scikit-learn classifiers exported by skl2onnx with its
/// default options, ZipMap on (`Tests/LayerKitTests/Fixtures/zipmap`,
/// `Scripts/generate_zipmap_fixtures.py`): the label `.npy` equals
/// scikit-learn's predict, and the `.json` maps, one per row, hold
/// predict_proba's columns under the classes' labels within 1e-5.
struct ZipMapRunCommandTests {
    static let fixtures = ModelCommandTests.fixtures.deletingLastPathComponent().appendingPathComponent("zipmap")

    @Test(arguments: ["logistic_regression_iris", "random_forest_iris"])
    func runWritesScikitLearnsLabelsAndProbabilities(_ name: String) throws {
        let folder = Self.fixtures.appendingPathComponent(name)
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        try #require(runner.run(["run", folder.appendingPathComponent("model.onnx").path, "--backend", "cpu",
                                 "--input", "X=" + folder.appendingPathComponent("x.npy").path,
                                 "--output", "output_label=\(directory)/label.npy",
                                 "--output", "output_probability=\(directory)/probabilities.json"]) == 0, "\(runner.error)")
        #expect(runner.out.contains("output 'output_probability': 30 maps {label: probability}"), "\(runner.out)")
        let label = try TypedTensor(npyFile: "\(directory)/label.npy")
        let expectedLabel = try TypedTensor(npyFile: folder.appendingPathComponent("sklearn_label.npy").path)
        if expectedLabel.elementType == .string {
            #expect(label.strings == expectedLabel.strings, "\(name)")
        } else {
            #expect(label.elementType == .int64 && label.integers() == expectedLabel.integers(), "\(name)")
        }
        let classes = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: folder.appendingPathComponent("classes.json"))) as? [String])
        let maps = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: URL(fileURLWithPath: "\(directory)/probabilities.json"))) as? [[String: Double]])
        let probabilities = try TypedTensor(npyFile: folder.appendingPathComponent("sklearn_probabilities.npy").path)
        try #require(maps.count == probabilities.shape[0] && probabilities.shape[1] == classes.count)
        var worst = 0.0
        for (row, map) in maps.enumerated() {
            #expect(Set(map.keys) == Set(classes), "\(name) row \(row): \(map.keys.sorted())")
            for (column, label) in classes.enumerated() {
                let error = abs((map[label] ?? .nan) - probabilities.double(at: row * classes.count + column))
                #expect(error <= 1e-5, "\(name) row \(row) \(label): error \(error)")
                worst = max(worst, error.isNaN ? .infinity : error)
            }
        }
        print("zipmap \(name): max |probability - scikit-learn's| \(worst)")
        // The maps' text keeps the classes' order, row after row.
        let text = try String(contentsOfFile: "\(directory)/probabilities.json", encoding: .utf8)
        let firstRow = try #require(text.split(separator: "\n").first)
        let positions = classes.compactMap { firstRow.range(of: "\"\($0)\"")?.lowerBound }
        #expect(positions.count == classes.count && positions == positions.sorted(), "\(firstRow)")
    }

    /// A sequence of maps has no .npy form: the error names the output, its form and the .json it takes.
    @Test func mapsAskedForAsNPYAreRefusedNamingTheJSONForm() throws {
        let folder = Self.fixtures.appendingPathComponent("logistic_regression_iris")
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        let status = runner.run(["run", folder.appendingPathComponent("model.onnx").path, "--backend", "cpu",
                                 "--input", "X=" + folder.appendingPathComponent("x.npy").path,
                                 "--output", "output_probability=\(directory)/p.npy"])
        #expect(status != 0)
        #expect(runner.error.contains("output 'output_probability' is a sequence(map(int64, tensor(float32)))")
                && runner.error.contains(".json"), "\(runner.error)")
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/p.npy"))
    }
}
