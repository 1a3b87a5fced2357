import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// Core ML classic models as coremltools' scikit-learn converter writes them
/// (`Fixtures/coreml-classic`, `Scripts/generate_coreml_classic_fixtures.py`),
/// run on float64 rows against scikit-learn's own float64 predictions:
/// within 1e-5 relative (to max(1, |ref|)), labels equal.
@Suite struct CoreMLClassicModelTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/coreml-classic")

    static let cases: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
        .filter { $0 != "boston_pricer" && !$0.hasPrefix("refused") }.sorted()

    /// The worst relative error of `name`'s outputs against scikit-learn's (labels must be equal).
    @discardableResult
    static func check(_ name: String, model: Model, inputs: [String: TypedTensor], tolerance: Double = 1e-5) throws -> Double {
        let folder = directory.appendingPathComponent(name)
        let outputs = try model.predict(typed: inputs)
        var worst = 0.0, compared = 0
        for description in model.outputs {
            let path = folder.appendingPathComponent("sklearn_\(description.name).npy").path
            guard FileManager.default.fileExists(atPath: path) else { continue }
            let reference = try TypedTensor(npyFile: path)
            let output = try #require(outputs[description.name])
            compared += 1
            // Core ML's per-row scalars are [N, 1] here, [N] in scikit-learn: the values are compared.
            #expect(output.count == reference.count, "\(name) \(description.name): \(output.shape) vs \(reference.shape)")
            guard output.count == reference.count else { continue }
            if reference.elementType == .int64 {
                #expect(output.elementType == .int64 && output.integers() == reference.integers(), "\(name) \(description.name)")
                continue
            }
            if reference.elementType == .string {
                #expect(output.elementType == .string && output.strings == reference.strings, "\(name) \(description.name)")
                continue
            }
            let error = ClassicMLModelTests.relativeError(output, reference)
            #expect(error <= tolerance, "\(name) \(description.name): relative error \(error)")
            print("coreml-classic \(name) \(description.name): max relative error \(error)")
            worst = max(worst, error)
        }
        #expect(compared >= 1, "\(name): no output was compared")
        return worst
    }

    @Test(arguments: cases) func matchesScikitLearn(_ name: String) throws {
        let folder = Self.directory.appendingPathComponent(name)
        let model = try Model(contentsOf: folder.appendingPathComponent("model.mlmodel"), computeUnits: .cpuOnly,
                              notice: { _ in })
        #expect(model.inputs.map(\.dataType) == [.float64], "\(name): the DOUBLE input is float64")
        let x = try TypedTensor(npyFile: folder.appendingPathComponent("x.npy").path)
        try Self.check(name, model: model, inputs: [model.inputs[0].name: x])
    }

    /// A multiclass random forest as coremltools' converter writes it: each
    /// tree's leaves hold its class fractions undivided (only a binary
    /// forest's are scaled by 1 / trees, so `random_forest_binary` is
    /// predict_proba itself), and Core ML sums the trees, so its
    /// classProbability is the trees' count times scikit-learn's
    /// predict_proba (coremltools issue #1541). LayerKit returns what Core
    /// ML returns: each row sums to the 4 trees, each value 4 times
    /// predict_proba; the labels are scikit-learn's (`matchesScikitLearn`).
    @Test func aMulticlassForestsProbabilitiesAreTheTreesSumAsCoreMLReturnsThem() throws {
        let folder = Self.directory.appendingPathComponent("random_forest_three")
        let model = try Model(contentsOf: folder.appendingPathComponent("model.mlmodel"), computeUnits: .cpuOnly,
                              notice: { _ in })
        let x = try TypedTensor(npyFile: folder.appendingPathComponent("x.npy").path)
        let outputs = try model.predict(typed: [model.inputs[0].name: x])
        let probabilities = try #require(outputs["classProbability"])
        let proba = try TypedTensor(npyFile: folder.appendingPathComponent("predict_proba.npy").path)
        #expect(probabilities.shape == proba.shape)
        let (values, expected) = (probabilities.doubles(), proba.doubles())
        for (p, q) in zip(values, expected) { #expect(abs(p - 4 * q) <= 1e-5 * max(1, 4 * q), "\(p) vs 4 × \(q)") }
        for row in 0..<proba.shape[0] {
            let sum = values[row * 3..<(row + 1) * 3].reduce(0, +)
            #expect(abs(sum - 4) <= 1e-5, "row \(row) sums to \(sum)")
        }
    }

    /// The seed document's kind: a pipeline of a featureVectorizer over 13
    /// named double features and a glmRegressor, one column per input.
    @Test func bostonPricerTakesItsNamedFeatures() throws {
        let folder = Self.directory.appendingPathComponent("boston_pricer")
        let model = try Model(contentsOf: folder.appendingPathComponent("model.mlmodel"), computeUnits: .cpuOnly,
                              notice: { _ in })
        #expect(model.inputs.count == 13 && model.inputs.first?.name == "CRIM")
        #expect(model.outputs.map(\.name) == ["price"] && model.outputs.first?.dataType == .float64)
        var inputs: [String: TypedTensor] = [:]
        for input in model.inputs {
            let column = try TypedTensor(npyFile: folder.appendingPathComponent("\(input.name).npy").path)
            inputs[input.name] = try TypedTensor(.float64, shape: [column.count, 1], doubles: column.doubles())
        }
        try Self.check("boston_pricer", model: model, inputs: inputs)
        #expect(model.nodes.map(\.opType) == ["FeatureVectorizer", "LinearRegressor"])
    }

    /// The regressors on a DOUBLE input compute in double, Core ML's double
    /// parameters kept (`_as_tensor` attributes): scikit-learn's float64
    /// predictions within 1e-12 (float32 arithmetic is ~1e-7 off).
    @Test(arguments: ["boston_pricer", "linear_svr", "svr_rbf", "decision_tree_regressor", "random_forest_regressor",
                      "gradient_boosting_regressor"])
    func doubleInputsComputeInDouble(_ name: String) throws {
        let folder = Self.directory.appendingPathComponent(name)
        let model = try Model(contentsOf: folder.appendingPathComponent("model.mlmodel"), computeUnits: .cpuOnly,
                              notice: { _ in })
        let x = try TypedTensor(npyFile: folder.appendingPathComponent("x.npy").path)
        var inputs: [String: TypedTensor] = [:]
        for (k, input) in model.inputs.enumerated() {
            // BostonPricer's named columns are x's columns, in order.
            inputs[input.name] = model.inputs.count == 1 ? x : try TypedTensor(
                .float64, shape: [x.shape[0], 1], doubles: (0..<x.shape[0]).map { x.double(at: $0 * x.shape[1] + k) })
        }
        let error = try Self.check(name, model: model, inputs: inputs, tolerance: 1e-12)
        print("coreml-classic \(name) in double: max relative error \(error)")
    }

    /// String class labels: the node names them (`classlabels_strings`), the label output is a string.
    @Test func stringLabelsAreTheLabelOutputsStrings() throws {
        let data = try Data(contentsOf: Self.directory.appendingPathComponent("logistic_strings/model.mlmodel"))
        let model = try CoreMLModel(data: data, source: "logistic_strings")
        #expect(model.classLabels == ["setosa", "versicolor", "virginica"])
        let graph = try model.onnxModel()
        #expect(graph.graph.nodes.map(\.opType) == ["LinearClassifier", "Normalizer"])
        let classifier = try #require(graph.graph.nodes.first)
        #expect(try classifier.strings("classlabels_strings") == ["setosa", "versicolor", "virginica"])
        #expect(try classifier.ints("classlabels_ints") == nil)
        #expect(graph.graph.outputs.first { $0.name == "classLabel" }?.elementType?.rawValue == 8)
    }

    /// A NeuralNetworkClassifier's labels (`stringClassLabels`, as coremltools wrote them) are the model's class labels.
    @Test func aNeuralNetworkClassifiersLabelsAreRead() throws {
        let url = Self.directory.deletingLastPathComponent().appendingPathComponent("coreml/ImageClassifier.mlmodel")
        let model = try Model(contentsOf: url, computeUnits: .cpuOnly, notice: { _ in })
        #expect(model.classLabels == ["cat", "dog", "owl", "fox", "elk"])
    }

    /// A dictVectorizer (a dictionary input) is refused by name, with the types LayerKit translates.
    @Test func aDictVectorizerIsRefusedByName() throws {
        let url = Self.directory.appendingPathComponent("refused_dict_vectorizer/model.mlmodel")
        #expect {
            _ = try Model(contentsOf: url, computeUnits: .cpuOnly, notice: { _ in })
        } throws: { error in
            guard case LayerKitError.invalidModel(let message) = error else { return false }
            return message.hasPrefix("model.mlmodel: a pipeline model of type dictVectorizer, which LayerKit does not translate")
                && message.contains("glmRegressor")
        }
    }

    /// Bytes of every model changed, one at a time, to values that break
    /// counts, ids and wire types: each load either works or throws a
    /// `LayerKitError`, never a crash or a huge allocation.
    @Test(arguments: cases + ["boston_pricer"]) func changedBytesAreRefusedOrRead(_ name: String) throws {
        let data = try Data(contentsOf: Self.directory.appendingPathComponent("\(name)/model.mlmodel"))
        for position in stride(from: 0, to: data.count, by: max(1, data.count / 60)) {
            for value: UInt8 in [0x00, 0x7f, 0xff, 0x08] {
                var bytes = [UInt8](data)
                bytes[position] = value
                do {
                    _ = try Model(data: Data(bytes), name: "changed.mlmodel", computeUnits: .cpuOnly, notice: { _ in })
                } catch is LayerKitError {
                }
            }
        }
    }

    /// Cutting the pipeline anywhere in its body is refused with a message naming the file, never a crash.
    @Test func aTruncatedPipelineIsRefusedNamingTheFile() throws {
        let data = try Data(contentsOf: Self.directory.appendingPathComponent("pipeline_imputer_scaler_normalizer/model.mlmodel"))
        var refused = 0
        for length in stride(from: 8, to: data.count, by: max(1, data.count / 40)) {
            do {
                _ = try CoreMLModel(data: data.prefix(length), source: "cut.mlmodel").onnxModel()
            } catch LayerKitError.invalidModel(let message) {
                #expect(message.hasPrefix("cut.mlmodel"), "\(message)")
                refused += 1
            }
        }
        #expect(refused >= 30)
    }
}
