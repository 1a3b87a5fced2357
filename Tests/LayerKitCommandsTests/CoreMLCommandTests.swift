import Foundation
import LayerKit
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
