import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// Updatable Core ML models (Core ML 3): the update parameters read, an
/// update trained as the file says with no other setting (as
/// `MLUpdateTask`), against the weights numpy computes for the same steps
/// in float64 (`Scripts/generate_coreml_fixtures.py`), and the updated
/// model written back as an `.mlmodel` whose only changed bytes are the
/// trained weights' values.
@Suite struct CoreMLUpdatableTests {
    static func fixture(_ name: String) -> URL { CoreMLModelTests.fixture(name) }

    /// The classifier's and the regressor's trained weights (`NAME-trained-WEIGHT.npy`).
    static let weights = ["UpdatableClassifier": ["conv.weights", "conv.bias", "dense.weights", "dense.bias"],
                          "UpdatableRegressor": ["hidden.weights", "hidden.bias", "y.weights", "y.bias"]]

    static func data(_ name: String) throws -> ArrayBatchProvider {
        try ArrayBatchProvider(inputs: Tensor(npyFile: fixture("\(name)-data.npy").path),
                               targets: Tensor(npyFile: fixture("\(name)-labels.npy").path))
    }

    @Test func theUpdateParametersAreRead() throws {
        let data = try Data(contentsOf: Self.fixture("UpdatableClassifier.mlmodel"))
        let model = try CoreMLModel(data: data, source: "UpdatableClassifier.mlmodel")
        #expect(model.isUpdatable)
        #expect(model.trainingInputs.map(\.name) == ["x", "probs_true"])
        let parameters = try #require(model.updateParameters)
        #expect(parameters.lossLayers == [.init(name: "loss", kind: .categoricalCrossEntropy, input: "probs",
                                                target: "probs_true")])
        #expect(parameters.optimizer == .sgd(learningRate: 0.05, miniBatchSize: 4, momentum: 0.9))
        #expect(parameters.epochs == 1 && parameters.shuffle == false)
        let setup = try model.trainingSetup()
        #expect(setup.loss == .softmaxCrossEntropy && setup.updatable == Self.weights["UpdatableClassifier"])
        #expect(setup.model.graph.outputs.map(\.name) == ["probs"])

        let configuration = try TrainingConfiguration(updatableModelAt: Self.fixture("UpdatableClassifier.mlmodel"))
        #expect(configuration.loss == .crossEntropy && configuration.optimizer == .sgd(learningRate: 0.05, momentum: 0.9))
        #expect(configuration.batchSize == 4 && configuration.epochs == 1 && !configuration.shuffles)
        #expect(configuration.trainable == .named(Self.weights["UpdatableClassifier"] ?? []))

        let regressor = try TrainingConfiguration(updatableModelAt: Self.fixture("UpdatableRegressor.mlmodel"))
        #expect(regressor.loss == .meanSquaredError
                && regressor.optimizer == .adam(learningRate: 0.02, beta1: 0.9, beta2: 0.999, epsilon: 1e-8))
    }

    /// Two steps of SGD with momentum (the classifier: convolution and innerProduct, cross-entropy
    /// of the softmax) and of Adam (the regressor: MSE, one layer's weights float16), each weight
    /// against numpy's float64 steps; the written file holds the task's values (float16 ones
    /// rounded to float16) and differs from the original only in those values' bytes.
    @Test(arguments: ["UpdatableClassifier", "UpdatableRegressor"])
    func anUpdateTrainsAsTheFileSaysAndIsWrittenBack(_ name: String) throws {
        let url = Self.fixture("\(name).mlmodel")
        let task = try UpdateTask(updatableModelAt: url, data: Self.data(name))
        let names = try #require(Self.weights[name])
        #expect(task.trainableNames == names.sorted())
        try task.run()
        for weight in names {
            let reference = try TypedTensor(npyFile: Self.fixture("\(name)-trained-\(weight).npy").path).doubles()
            let trained = try #require(task.parameters[weight]).elements
            #expect(trained.count == reference.count)
            for (value, expected) in zip(trained, reference) {
                #expect(abs(Double(value) - expected) <= 1e-5 * max(0.1, abs(expected)),
                        "\(name) \(weight): \(value) vs \(expected)")
            }
        }

        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let output = URL(fileURLWithPath: folder.file("updated.mlmodel"))
        try task.writeModel(to: output)
        let original = try [UInt8](Data(contentsOf: url)), written = try [UInt8](Data(contentsOf: output))
        #expect(written.count == original.count)
        let (_, graph) = try CoreMLModel(data: Data(original), source: name).translated()
        var trainedBytes = Set<Int>()
        for weight in names {
            for run in try #require(graph.weightLocations[weight]).runs { trainedBytes.formUnion(run) }
        }
        for i in original.indices where original[i] != written[i] {
            #expect(trainedBytes.contains(i), "\(name): byte \(i) changed outside the trained weights")
        }
        // Read back, every weight is the task's: float16 ones rounded to nearest.
        let reread = try CoreMLModel(data: Data(written), source: "updated.mlmodel").onnxModel()
        for weight in names {
            let location = try #require(graph.weightLocations[weight])
            let values = try #require(reread.graph.initializers[weight]).floats()
            let trained = try #require(task.parameters[weight]).values
            #expect(values == (location.half ? trained.map { Float(Float16($0)) } : trained), "\(name) \(weight)")
        }
        #expect(try CoreMLModel(data: Data(written), source: "updated.mlmodel").updateParameters
                == CoreMLModel(data: Data(original), source: name).updateParameters)
    }

    /// The same update on the GPU: within 1e-3 of numpy's steps.
    @Test(.enabled(if: TestGPU.isEnabled), arguments: ["UpdatableClassifier", "UpdatableRegressor"])
    func anUpdateOnTheGPUTrainsAsNumpyComputes(_ name: String) throws {
        let backend = try Backend(computeUnits: .gpu, context: TestGPU.get(), timestamps: false, notice: { _ in })
        let task = try UpdateTask(modelAt: Self.fixture("\(name).mlmodel"), data: Self.data(name),
                                  configuration: TrainingConfiguration(updatableModelAt: Self.fixture("\(name).mlmodel")),
                                  backend: backend)
        try task.run()
        for weight in Self.weights[name] ?? [] {
            let reference = try TypedTensor(npyFile: Self.fixture("\(name)-trained-\(weight).npy").path).doubles()
            for (value, expected) in zip(try #require(task.parameters[weight]).elements, reference) {
                #expect(abs(Double(value) - expected) <= 1e-3 * max(1, abs(expected)), "\(name) \(weight)")
            }
        }
    }

    @Test func theWeightsOfANamedLayerAreReplacedInPlace() throws {
        let data = try Data(contentsOf: Self.fixture("PlainNet.mlmodel"))
        let bias = try Tensor(shape: [10], values: (0..<10).map { Float($0) / 4 })
        let updated = try CoreMLModel.replacingWeights(["logits.bias": bias], in: data, source: "PlainNet.mlmodel")
        #expect(updated.count == data.count)
        let reread = try CoreMLModel(data: updated, source: "updated").onnxModel()
        #expect(try reread.graph.initializers["logits.bias"]?.floats() == bias.values)
        let unchanged = try CoreMLModel(data: data, source: "PlainNet").onnxModel()
        for name in unchanged.graph.initializerNames where name != "logits.bias" {
            #expect(try reread.graph.initializers[name]?.floats() == unchanged.graph.initializers[name]?.floats())
        }
        #expect { try CoreMLModel.replacingWeights(["logits.bais": bias], in: data, source: "PlainNet.mlmodel") }
            throws: { "\($0)".contains("no weight of the Core ML model is named 'logits.bais'")
                      && "\($0)".contains("logits.bias") }
        #expect { try CoreMLModel.replacingWeights(["logits.bias": try Tensor(shape: [5])], in: data, source: "P") }
            throws: { "\($0)".contains("weight 'logits.bias' has shape [10] but its update has shape [5]") }
    }

    @Test func whatCannotBeTrainedAsTheFileSaysIsNamed() throws {
        // An ONNX model holds no training configuration; a Core ML model without updateParams is not updatable.
        let onnx = TrainingTaskTests.url("student.onnx")
        #expect { try TrainingConfiguration(updatableModelAt: onnx) } throws: {
            "\($0)".contains("student.onnx is an ONNX model, which holds no training configuration")
        }
        #expect { try TrainingConfiguration(updatableModelAt: Self.fixture("PlainNet.mlmodel")) } throws: {
            "\($0)".contains("PlainNet.mlmodel: the Core ML model has no update parameters")
        }
        // The task refuses to write over the model it trains.
        let task = try UpdateTask(updatableModelAt: Self.fixture("UpdatableRegressor.mlmodel"),
                                  data: Self.data("UpdatableRegressor"))
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let copy = folder.file("model.mlmodel")
        try FileManager.default.copyItem(atPath: Self.fixture("UpdatableRegressor.mlmodel").path, toPath: copy)
        let copied = try UpdateTask(updatableModelAt: URL(fileURLWithPath: copy), data: Self.data("UpdatableRegressor"))
        #expect { try copied.writeModel(to: URL(fileURLWithPath: copy)) } throws: { "\($0)".contains("refusing to overwrite") }
        _ = task
    }
}
