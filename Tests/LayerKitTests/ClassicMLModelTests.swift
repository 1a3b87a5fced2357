import Foundation
import Testing
@testable import LayerKit

/// scikit-learn's classic models as skl2onnx exports them, against
/// scikit-learn's own results (`Fixtures/classic-ml`,
/// `Scripts/generate_classic_ml_fixtures.py`; the single-node `trees-node_*`
/// cases against onnxruntime's): every case of a family runs through
/// `Model.predict(typed:)` on the CPU; labels (integers or strings) must equal the reference,
/// scores be within 1e-5 of max(1, |reference|). And the errors hostile
/// attributes meet.
@Suite struct ClassicMLModelTests {
    /// Output `name`'s reference in `folder`: scikit-learn's result where the
    /// script saved one, else onnxruntime's.
    static func reference(_ folder: URL, _ name: String) throws -> TypedTensor {
        let sklearn = folder.appendingPathComponent("sklearn_\(name).npy")
        return try TypedTensor(npyFile: FileManager.default.fileExists(atPath: sklearn.path) ? sklearn.path
                               : folder.appendingPathComponent("onnxruntime_\(name).npy").path)
    }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/classic-ml")

    static let cases: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()

    static func cases(_ family: String) -> [String] { cases.filter { $0.hasPrefix(family + "-") } }

    /// The largest `|output - reference| / max(1, |reference|)`, element by element.
    static func relativeError(_ output: TypedTensor, _ reference: TypedTensor) -> Double {
        (0..<reference.count).reduce(0.0) { worst, k in
            let (value, expected) = (output.double(at: k), reference.double(at: k))
            return max(worst, abs(value - expected) / max(1, abs(expected)))
        }
    }

    /// The worst relative error of `name`'s outputs against scikit-learn's;
    /// labels (integer or string outputs) must be equal. Each output's error is printed.
    @discardableResult
    static func check(_ name: String, computeUnits: ComputeUnits = .cpuOnly) throws -> Double {
        let folder = directory.appendingPathComponent(name)
        let model = try Model(contentsOf: folder.appendingPathComponent("model.onnx"), computeUnits: computeUnits)
        let x = try TypedTensor(npyFile: folder.appendingPathComponent("x.npy").path)
        let outputs = try model.predict(typed: [model.inputs[0].name: x])
        var worst = 0.0
        for description in model.outputs {
            let reference = try ClassicMLModelTests.reference(folder, description.name)
            let output = try #require(outputs[description.name])
            #expect(output.shape == reference.shape, "\(name) \(description.name): \(output.shape) vs \(reference.shape)")
            guard output.shape == reference.shape else { continue }
            if reference.elementType == .int64 {
                #expect(output.integers() == reference.integers(), "\(name) \(description.name)")
                continue
            }
            if reference.elementType == .string {
                #expect(output.elementType == .string && output.strings == reference.strings, "\(name) \(description.name)")
                continue
            }
            let error = Self.relativeError(output, reference)
            #expect(error <= 1e-5, "\(name) \(description.name): relative error \(error)")
            print("classic-ml \(name) \(description.name): max relative error \(error)")
            worst = max(worst, error)
        }
        return worst
    }

    @Test func everyFamilyHasCases() {
        for family in ["trees", "svm", "kmeans", "preprocessing", "labels", "double"] { #expect(!Self.cases(family).isEmpty, "\(family)") }
    }

    @Test(arguments: cases("trees")) func treesMatchScikitLearn(_ name: String) throws { try Self.check(name) }

    @Test(arguments: cases("svm")) func svmsMatchScikitLearn(_ name: String) throws { try Self.check(name) }

    @Test(arguments: cases("kmeans")) func kMeansMatchesScikitLearn(_ name: String) throws { try Self.check(name) }

    @Test(arguments: cases("preprocessing")) func preprocessingMatchesScikitLearn(_ name: String) throws {
        try Self.check(name)
    }

    /// Classifiers fitted on string targets: the label output is a string tensor (`classlabels_strings`).
    @Test(arguments: cases("labels")) func stringLabelsMatchScikitLearn(_ name: String) throws { try Self.check(name) }

    /// A float64 input walks the trees in double (`nodes_values_as_tensor`): rows one double ulp
    /// past a threshold branch as onnxruntime's double walk does, where a float32 one would not.
    @Test(arguments: cases("double")) func doubleInputsWalkTheTreesInDouble(_ name: String) throws {
        let model = try Model(contentsOf: Self.directory.appendingPathComponent(name).appendingPathComponent("model.onnx"),
                              computeUnits: .cpuOnly)
        #expect(model.inputs.map(\.dataType) == [.float64])
        try Self.check(name)
    }

    // MARK: - Hostile attributes

    typealias M = MLModelTests

    /// A two-leaf regressor tree with `change` applied to its attributes.
    static func tree(_ change: (inout [String: [UInt8]]) -> Void) -> String {
        var attributes: [String: [UInt8]] = [
            "nodes_treeids": M.ints("nodes_treeids", [0, 0, 0]), "nodes_nodeids": M.ints("nodes_nodeids", [0, 1, 2]),
            "nodes_featureids": M.ints("nodes_featureids", [2, 0, 0]), "nodes_values": M.floats("nodes_values", [0.5, 0, 0]),
            "nodes_modes": M.strings("nodes_modes", ["BRANCH_LEQ", "LEAF", "LEAF"]),
            "nodes_truenodeids": M.ints("nodes_truenodeids", [1, 0, 0]),
            "nodes_falsenodeids": M.ints("nodes_falsenodeids", [2, 0, 0]),
            "target_treeids": M.ints("target_treeids", [0, 0]), "target_nodeids": M.ints("target_nodeids", [1, 2]),
            "target_ids": M.ints("target_ids", [0, 0]), "target_weights": M.floats("target_weights", [1, 2]),
        ]
        change(&attributes)
        return M.failure(M.model("TreeEnsembleRegressor", attributes: attributes.keys.sorted().compactMap { attributes[$0] }))
    }

    @Test func theTestTreeLoads() { #expect(Self.tree { _ in } == "loaded") }

    @Test func treeCyclesAreRefused() {
        let message = Self.tree {
            $0["nodes_modes"] = M.strings("nodes_modes", ["BRANCH_LEQ", "BRANCH_LEQ", "LEAF"])
            $0["nodes_truenodeids"] = M.ints("nodes_truenodeids", [1, 0, 0])
        }
        #expect(message.contains("node 'skl' (TreeEnsembleRegressor)") && message.contains("the trees loop"), "\(message)")
        let selfLoop = Self.tree { $0["nodes_truenodeids"] = M.ints("nodes_truenodeids", [0, 0, 0]) }
        #expect(selfLoop.contains("the trees loop"), "\(selfLoop)")
    }

    @Test func missingNodesAndFeaturesAreRefused() {
        let child = Self.tree { $0["nodes_falsenodeids"] = M.ints("nodes_falsenodeids", [99, 0, 0]) }
        #expect(child.contains("names false node 99, which the tree does not have"), "\(child)")
        let feature = Self.tree { $0["nodes_featureids"] = M.ints("nodes_featureids", [3, 0, 0]) }
        #expect(feature.contains("reads feature 3; the input has 3"), "\(feature)")
        let weight = Self.tree { $0["target_nodeids"] = M.ints("target_nodeids", [1, 7]) }
        #expect(weight.contains("weight 1 names node 7 of tree 0"), "\(weight)")
        let mode = Self.tree { $0["nodes_modes"] = M.strings("nodes_modes", ["BRANCH_XX", "LEAF", "LEAF"]) }
        #expect(mode.contains("mode 'BRANCH_XX'"), "\(mode)")
    }

    @Test func mismatchedLengthsAndHugeCountsAreRefused() {
        let lengths = Self.tree { $0["nodes_values"] = M.floats("nodes_values", [0.5, 0]) }
        #expect(lengths.contains("nodes_values has 2 values for 3 nodes"), "\(lengths)")
        let weights = Self.tree { $0["target_ids"] = M.ints("target_ids", [0]) }
        #expect(weights.contains("must be as long"), "\(weights)")
        let targets = Self.tree { $0["n_targets"] = M.int("n_targets", 1 << 40) }
        #expect(targets.contains("n_targets 1099511627776 is not in 1...65535"), "\(targets)")
        let target = Self.tree { $0["target_ids"] = M.ints("target_ids", [0, 1]) }
        #expect(target.contains("weight 1 is for target 1; the ensemble has 1"), "\(target)")
        let twice = Self.tree { $0["nodes_nodeids"] = M.ints("nodes_nodeids", [0, 1, 1]) }
        #expect(twice.contains("node 1 of tree 0 is listed twice"), "\(twice)")
    }

    @Test func svmCountsAreChecked() {
        let message = M.failure(M.model("SVMClassifier", outputs: ["label", "scores"], attributes: [
            M.ints("classlabels_ints", [0, 1]), M.ints("vectors_per_class", [1, 1 << 40]),
            M.floats("support_vectors", [1, 2, 3, 4, 5, 6]), M.floats("coefficients", [1, 1]), M.floats("rho", [0]),
        ]))
        #expect(message.contains("node 'skl' (SVMClassifier)") && message.contains("vectors_per_class"), "\(message)")
        let regressor = M.failure(M.model("SVMRegressor", attributes: [
            M.int("n_supports", 2), M.floats("support_vectors", [1, 2, 3]), M.floats("coefficients", [1, 1]),
            M.floats("rho", [0]),
        ]))
        #expect(regressor.contains("3 support vector values and 2 coefficients for n_supports 2"), "\(regressor)")
        let cubic = PB.string(1, "kernel_type") + PB.string(4, "CUBIC") + PB.int(20, 3)  // a string attribute
        let kernel = M.failure(M.model("SVMRegressor", attributes: [
            cubic, M.floats("coefficients", [1, 1, 1]), M.floats("rho", [0]),
        ]))
        #expect(kernel.contains("kernel_type 'CUBIC'"), "\(kernel)")
    }
}
