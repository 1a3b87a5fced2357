import Foundation
import LayerKit
import LayerKitONNX
import Testing

/// `layerkit run` and `inspect` on the Core ML fixtures of
/// `Scripts/generate_coreml_fixtures.py`, as the article's reader runs
/// them: the custom Swish layer given as a formula with `--layer`, the
/// outputs written and checked against numpy's float64 results.
struct CoreMLCommandTests {
    static let fixtures = ModelCommandTests.fixtures.deletingLastPathComponent().appendingPathComponent("coreml")

    static func fixture(_ name: String) -> String { fixtures.appendingPathComponent(name).path }

    @Test func runOnTheCPUWritesWhatNumpyComputes() throws { try Self.runArticleNet(backend: "cpu") }

    @Test(.enabled(if: gpuTestsEnabled))
    func runOnTheGPUWritesWhatNumpyComputes() throws { try Self.runArticleNet(backend: "gpu") }

    static func runArticleNet(backend: String) throws {
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        let status = runner.run(["run", Self.fixture("NeuralMcNeuralNet.mlmodel"), "--backend", backend,
                                 "--layer", "Swish=x * sigmoid(beta * x)",
                                 "--input", Self.fixture("NeuralMcNeuralNet-input.npy"),
                                 "--output", "output=\(directory)/output.npy", "--output", "logits=\(directory)/logits.npy"])
        try #require(status == 0, "\(runner.error)")
        // The CPU computes in float32: within 1e-4 of numpy's float64. The GPU
        // stores each layer's output in fp16: within 2e-3 · max(1, |ref|) of
        // numpy's result with those outputs rounded so ("-fp16").
        let (tolerance, suffix) = backend == "gpu" ? (2e-3, "-fp16") : (1e-4, "")
        for output in ["output", "logits"] {
            let written = try TypedTensor(npyFile: "\(directory)/\(output).npy")
            let reference = try TypedTensor(npyFile: Self.fixture("NeuralMcNeuralNet-\(output)\(suffix).npy"))
            #expect(written.shape == reference.shape)
            for (y, expected) in zip(written.doubles(), reference.doubles()) {
                #expect(abs(y - expected) <= tolerance * max(1, abs(expected)), "\(backend) \(output): \(y) vs \(expected)")
            }
        }
    }

    /// `layerkit run` on the recurrent layers' network: three named inputs (the sequence x of
    /// 5 steps, initial h0 and c0), the sequence outputs and the final states written, each
    /// within 1e-5 of numpy's float64 result of NeuralNetwork.proto's equations.
    @Test func runFeedsARecurrentNetworkItsSequenceAndStates() throws {
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        let outputs = ["rnn_y", "gru_y", "lstm_c", "bi_y", "bi_h_back"]
        var arguments = ["run", Self.fixture("RecurrentNet.mlmodel"), "--backend", "cpu"]
        for input in ["x", "h0", "c0"] { arguments += ["--input", "\(input)=\(Self.fixture("RecurrentNet-input-\(input).npy"))"] }
        for output in outputs { arguments += ["--output", "\(output)=\(directory)/\(output).npy"] }
        let status = runner.run(arguments)
        try #require(status == 0, "\(runner.error)")
        for output in outputs {
            let written = try TypedTensor(npyFile: "\(directory)/\(output).npy")
            let reference = try TypedTensor(npyFile: Self.fixture("RecurrentNet-\(output).npy"))
            #expect(written.shape == reference.shape, "\(output): \(written.shape) vs \(reference.shape)")
            for (y, expected) in zip(written.doubles(), reference.doubles()) {
                #expect(abs(y - expected) <= 1e-5 * max(1, abs(expected)), "\(output): \(y) vs \(expected)")
            }
        }
    }

    /// A style-transfer-like network's image output: the .npy is the blob as computed (BGR,
    /// 0...255); the .png is a picture, with --scale 255 divided back to 0...1 and with
    /// --channel-order bgr its colours put in RGB order.
    @Test func anImageOutputIsWrittenAsNpyAndAsAPicture() throws {
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        let status = runner.run(["run", Self.fixture("StyleNet.mlmodel"), "--backend", "cpu",
                                 "--input", Self.fixture("StyleNet-input.npy"),
                                 "--output", "stylized=\(directory)/stylized.npy"])
        try #require(status == 0, "\(runner.error)")
        let reference = try TypedTensor(npyFile: Self.fixture("StyleNet-stylized.npy")).doubles()
        let written = try TypedTensor(npyFile: "\(directory)/stylized.npy")
        #expect(written.shape == [1, 3, 8, 8])
        for (y, expected) in zip(written.doubles(), reference) { #expect(abs(y - expected) <= 1e-4 * max(1, expected)) }

        let pictureRunner = CommandRunner()
        #expect(pictureRunner.run(["run", Self.fixture("StyleNet.mlmodel"), "--backend", "cpu",
                                   "--input", Self.fixture("StyleNet-input.npy"), "--scale", "255",
                                   "--channel-order", "bgr", "--output", "stylized=\(directory)/stylized.png"]) == 0,
                "\(pictureRunner.error)")
        let picture = try Tensor(pngFile: "\(directory)/stylized.png")
        #expect(picture.shape == [1, 3, 8, 8])
        let plane = 64
        for channel in 0..<3 {
            for i in 0..<plane {
                // RGB channel `channel` is the output's BGR channel 2 - channel, as 8-bit levels.
                let expected = (reference[(2 - channel) * plane + i] / 255 * 255).rounded() / 255
                #expect(abs(Double(picture[channel * plane + i]) - expected) <= 1.0 / 255 + 1e-6)
            }
        }
    }

    /// `layerkit train` on an updatable Core ML model with no option but the data, the labels and the
    /// output: the file's loss, optimizer, batch size and epochs, its updatable layers trained, the
    /// result an .mlmodel whose weights are numpy's two SGD steps and whose other bytes are the original's.
    @Test func trainingAnUpdatableModelTakesItsSettingsFromTheFile() throws {
        let directory = try CommandRunner.scratchDirectory()
        let output = "\(directory)/updated.mlmodel"
        let runner = CommandRunner()
        let status = runner.run(["train", Self.fixture("UpdatableClassifier.mlmodel"),
                                 "--data", Self.fixture("UpdatableClassifier-data.npy"),
                                 "--labels", Self.fixture("UpdatableClassifier-labels.npy"),
                                 "--output", output, "--backend", "cpu"])
        try #require(status == 0, "\(runner.error)")
        for text in ["8 items, batches of 4, ce loss, sgd at lr 0.05",
                     "trainable: conv.bias, conv.weights, dense.bias, dense.weights", "epoch 1/1", "wrote \(output)"] {
            #expect(runner.out.contains(text), "missing \(text) in \(runner.out)")
        }
        let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Self.fixture("UpdatableClassifier.mlmodel"))))
        let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: output)))
        #expect(written.count == original.count)
        let model = try CoreMLModel(data: Data(written), source: "updated.mlmodel").onnxModel()
        var changed = 0
        for weight in ["conv.weights", "conv.bias", "dense.weights", "dense.bias"] {
            let reference = try TypedTensor(npyFile: Self.fixture("UpdatableClassifier-trained-\(weight).npy")).doubles()
            let values = try #require(model.graph.initializers[weight]).floats()
            #expect(values.count == reference.count)
            for (value, expected) in zip(values, reference) {
                #expect(abs(Double(value) - expected) <= 1e-5 * max(0.1, abs(expected)), "\(weight)")
            }
            changed += 4 * values.count
        }
        // Only the trained values' bytes may differ (4 per float32 value).
        #expect(zip(original, written).filter { $0 != $1 }.count <= changed)
    }

    /// The written model must be an .mlmodel, and not the model read; a Core ML model that is not
    /// updatable needs --loss and --trainable, and says why.
    @Test func aTrainedCoreMLModelIsWrittenAsOneAndNotOverTheInput() throws {
        let directory = try CommandRunner.scratchDirectory()
        let model = "\(directory)/model.mlmodel"
        try FileManager.default.copyItem(atPath: Self.fixture("UpdatableRegressor.mlmodel"), toPath: model)
        let data = ["--data", Self.fixture("UpdatableRegressor-data.npy"), "--labels",
                    Self.fixture("UpdatableRegressor-labels.npy"), "--backend", "cpu"]
        let onnx = CommandRunner()
        #expect(onnx.run(["train", model, "--output", "\(directory)/out.onnx"] + data) == 2)
        #expect(onnx.error.contains("out.onnx: expected a .mlmodel file name"), "\(onnx.error)")
        let over = CommandRunner()
        #expect(over.run(["train", model, "--output", model] + data) != 0)
        #expect(over.error.contains("is also an input") || over.error.contains("overwrite"), "\(over.error)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: model))
                == Data(contentsOf: URL(fileURLWithPath: Self.fixture("UpdatableRegressor.mlmodel"))))
        let plain = CommandRunner()
        #expect(plain.run(["train", Self.fixture("PlainNet.mlmodel"), "--output", "\(directory)/plain.mlmodel"]
                          + data) != 0)
        #expect(plain.error.contains("has no update parameters") && plain.error.contains("give --loss and --trainable"),
                "\(plain.error)")
    }

    @Test func inspectShowsTheTranslatedNetwork() {
        let runner = CommandRunner()
        #expect(runner.run(["inspect", Self.fixture("NeuralMcNeuralNet.mlmodel"), "--backend", "cpu"]) == 0, "\(runner.error)")
        for text in ["Core ML specification version", "image", "Nx3x8x8", "com.apple.coreml.Swish", "MaxPool", "Gemm",
                     "1x10"] {
            #expect(runner.out.contains(text), "missing \(text) in \(runner.out)")
        }
    }

    /// A className nothing is registered for: the error names it and how `--layer` registers it.
    @Test func aMissingCustomLayerSaysHowToRegisterIt() throws {
        let directory = try CommandRunner.scratchDirectory()
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.fixture("NeuralMcNeuralNet.mlmodel"))))
        let from = Array("Swish".utf8)
        for i in 0...(bytes.count - from.count) where Array(bytes[i..<i + from.count]) == from {
            bytes.replaceSubrange(i..<i + from.count, with: Array("Swash".utf8))
        }
        let model = "\(directory)/ArticleNet.mlmodel"
        try Data(bytes).write(to: URL(fileURLWithPath: model))
        let runner = CommandRunner()
        #expect(runner.run(["run", model, "--input", Self.fixture("NeuralMcNeuralNet-input.npy")]) != 0)
        #expect(runner.error.contains("'Swash'") && runner.error.contains("--layer Swash='FORMULA'"), "\(runner.error)")
    }

    @Test func aTensorFlowLiteFileIsNamed() throws {
        let directory = try CommandRunner.scratchDirectory()
        let model = "\(directory)/model.tflite"
        try Data([0x1C, 0, 0, 0] + Array("TFL3".utf8) + [UInt8](repeating: 0, count: 24)).write(to: URL(fileURLWithPath: model))
        let runner = CommandRunner()
        #expect(runner.run(["inspect", model]) != 0)
        #expect(runner.error.contains("model.tflite: a vtable of 0 bytes at byte 28 while reading Model"),
                "\(runner.error)")
    }
}
