import Foundation
import LayerKit
import Testing

/// `layerkit run` on Core ML classic models (`Scripts/generate_coreml_classic_fixtures.py`):
/// the written outputs against scikit-learn's float64 predictions, and a
/// classifier's labels printed by name.
struct CoreMLClassicCommandTests {
    static let fixtures = ModelCommandTests.fixtures.deletingLastPathComponent().appendingPathComponent("coreml-classic")

    static func fixture(_ path: String) -> String { fixtures.appendingPathComponent(path).path }

    static let boston = ["CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX", "PTRATIO", "B", "LSTAT"]

    /// BostonPricer's kind: 13 named inputs, one file each; the double price within 1e-5 of scikit-learn's.
    @Test func runPricesTheHousesAsScikitLearnDoes() throws {
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        let inputs = Self.boston.flatMap { ["--input", "\($0)=\(Self.fixture("boston_pricer/\($0).npy"))"] }
        let status = runner.run(["run", Self.fixture("boston_pricer/model.mlmodel"), "--backend", "cpu"] + inputs
                                + ["--output", "price=\(directory)/price.npy"])
        try #require(status == 0, "\(runner.error)")
        #expect(runner.out.contains("output 'price': 5x1 float64"), "\(runner.out)")
        let written = try TypedTensor(npyFile: "\(directory)/price.npy")
        let reference = try TypedTensor(npyFile: Self.fixture("boston_pricer/sklearn_price.npy"))
        #expect(written.elementType == .float64 && written.count == reference.count)
        for (y, expected) in zip(written.doubles(), reference.doubles()) {
            #expect(abs(y - expected) <= 1e-5 * max(1, abs(expected)), "\(y) vs \(expected)")
        }
    }

    /// A classifier of string labels: each row's label and its top probabilities by name, in text and
    /// JSON; the label output written as a string `.npy`.
    @Test func runNamesAClassifiersLabels() throws {
        let directory = try CommandRunner.scratchDirectory()
        let model = Self.fixture("logistic_strings/model.mlmodel"), x = Self.fixture("logistic_strings/x.npy")
        let runner = CommandRunner()
        try #require(runner.run(["run", model, "--backend", "cpu", "--input", x, "--top", "2",
                                 "--output", "classLabel=\(directory)/label.npy",
                                 "--output", "classProbability=\(directory)/probabilities.npy"]) == 0, "\(runner.error)")
        let labels = try TypedTensor(npyFile: Self.fixture("logistic_strings/sklearn_classLabel.npy")).strings
        for (row, label) in labels.enumerated() {
            #expect(runner.out.contains("label [\(row)]: \(label)"), "\(runner.out)")
        }
        #expect(runner.out.contains("top-2 [0]: "), "\(runner.out)")
        let written = try TypedTensor(npyFile: "\(directory)/label.npy")
        #expect(written.elementType == .string && written.strings == labels)
        let probabilities = try TypedTensor(npyFile: "\(directory)/probabilities.npy")
        let reference = try TypedTensor(npyFile: Self.fixture("logistic_strings/sklearn_classProbability.npy"))
        #expect(probabilities.shape == reference.shape)
        for (p, expected) in zip(probabilities.doubles(), reference.doubles()) { #expect(abs(p - expected) <= 1e-5) }

        let json = CommandRunner()
        try #require(json.run(["run", model, "--backend", "cpu", "--input", x, "--json"]) == 0, "\(json.error)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        let outputs = try #require(((object["runs"] as? [[String: Any]])?.first?["outputs"]) as? [[String: Any]])
        let label = try #require(outputs.first { $0["name"] as? String == "classLabel" })
        #expect(label["labels"] as? [String] == labels)
        let top = try #require((outputs.first { $0["name"] as? String == "classProbability" })?["top"] as? [[[String: Any]]])
        #expect(top.first?.first?["label"] as? String == labels.first)
    }

    /// An SVM and a tree fitted on string targets: the written labels are scikit-learn's strings.
    @Test(arguments: ["svc_rbf_strings", "decision_tree_strings"])
    func runWritesStringLabels(_ name: String) throws {
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        try #require(runner.run(["run", Self.fixture("\(name)/model.mlmodel"), "--backend", "cpu",
                                 "--input", Self.fixture("\(name)/x.npy"),
                                 "--output", "classLabel=\(directory)/label.npy"]) == 0, "\(runner.error)")
        let written = try TypedTensor(npyFile: "\(directory)/label.npy")
        let reference = try TypedTensor(npyFile: Self.fixture("\(name)/sklearn_classLabel.npy"))
        #expect(written.elementType == .string && written.strings == reference.strings, "\(name): \(written.strings)")
    }
}
