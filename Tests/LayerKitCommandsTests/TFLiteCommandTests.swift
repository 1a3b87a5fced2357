import Foundation
import LayerKit
import Testing

/// `layerkit run`, `inspect` and `parity` on the TensorFlow Lite fixtures of
/// `Scripts/generate_tflite_fixtures.py`: mediapipe's face detector run on an
/// NHWC array, its outputs checked against LiteRT's.
struct TFLiteCommandTests {
    static let fixtures = ModelCommandTests.fixtures.deletingLastPathComponent().appendingPathComponent("tflite")

    static func fixture(_ name: String) -> String { fixtures.appendingPathComponent(name).path }

    @Test func runOnTheCPUWritesWhatLiteRTComputes() throws { try Self.runFaceDetector(backend: "cpu") }

    @Test(.enabled(if: gpuTestsEnabled))
    func runOnTheGPUWritesWhatLiteRTComputes() throws { try Self.runFaceDetector(backend: "gpu") }

    static func runFaceDetector(backend: String) throws {
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        let status = runner.run(["run", Self.fixture("face_detection_short_range.tflite"), "--backend", backend,
                                 "--input", Self.fixture("face_detection_short_range-input.npy"),
                                 "--output", "regressors=\(directory)/regressors.npy",
                                 "--output", "classificators=\(directory)/classificators.npy"])
        try #require(status == 0, "\(runner.error)")
        // The CPU computes in float32: within 1e-4 · max(1, |ref|) of LiteRT. The GPU
        // stores each layer's output in fp16, which over this deep model drifts up to
        // 0.047 · max(1, |ref|) (measured; TFLiteModelTests.gpuTolerances says why).
        let tolerance = backend == "gpu" ? 0.06 : 1e-4
        for (index, output) in ["regressors", "classificators"].enumerated() {
            let written = try TypedTensor(npyFile: "\(directory)/\(output).npy")
            let reference = try TypedTensor(npyFile: Self.fixture("face_detection_short_range-output\(index).npy"))
            #expect(written.shape == reference.shape)
            for (y, expected) in zip(written.doubles(), reference.doubles()) {
                #expect(abs(y - expected) <= tolerance * max(1, abs(expected)), "\(backend) \(output): \(y) vs \(expected)")
            }
        }
    }

    @Test func inspectShowsTheTranslatedGraphWithNHWCEdges() {
        let runner = CommandRunner()
        #expect(runner.run(["inspect", Self.fixture("face_detection_short_range.tflite"), "--backend", "cpu"]) == 0,
                "\(runner.error)")
        for text in ["TensorFlow Lite schema version 3", "input", "1x128x128x3", "regressors", "1x896x16",
                     "classificators", "Conv", "MaxPool", "Transpose"] {
            #expect(runner.out.contains(text), "missing \(text) in \(runner.out)")
        }
    }

    /// The activations and the resize/slice graphs, and mediapipe's face
    /// detector, whose GPU output is 5e-2 from the CPU's but within twice
    /// its fp16 twin's error (the whole-model rule): every output passes.
    @Test(.enabled(if: gpuTestsEnabled), arguments: ["activations", "resize_slice", "face_detection_short_range"])
    func parityPasses(_ name: String) {
        let runner = CommandRunner()
        #expect(runner.run(["parity", Self.fixture("\(name).tflite")]) == 0, "\(runner.out)\(runner.error)")
        #expect(runner.out.contains("PASS: all"), "\(runner.out)")
    }

    /// A fully int8 model with int8 edges: the integers LiteRT takes in, its
    /// convolution's integers out (as float32), within one quantum (1) of LiteRT's.
    @Test func runOnAnInt8ModelWritesLiteRTsIntegers() throws {
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        let status = runner.run(["run", Self.fixture("int8_io.tflite"), "--backend", "cpu",
                                 "--input", Self.fixture("int8_io-input.npy"),
                                 "--output", "Identity_1=\(directory)/y.npy"])
        try #require(status == 0, "\(runner.error)")
        let written = try TypedTensor(npyFile: "\(directory)/y.npy")
        let reference = try TypedTensor(npyFile: Self.fixture("int8_io-output1.npy"))
        #expect(written.shape == reference.shape)
        for (y, expected) in zip(written.doubles(), reference.doubles()) {
            #expect(abs(y - expected) <= 1 && y == y.rounded(), "\(y) vs \(expected)")
        }
    }

    @Test func anInt16ModelIsRefusedByName() {
        let runner = CommandRunner()
        #expect(runner.run(["run", Self.fixture("int16_input.tflite")]) != 0)
        #expect(runner.error.contains("int16_input.tflite: input") && runner.error.contains("is INT16"),
                "\(runner.error)")
    }
}

extension TFLiteCommandTests {
    /// A custom op nothing is registered for resolves through the layer registry by its
    /// name, as an ONNX custom op does: the error names it and how `--layer` registers it.
    @Test func anUnregisteredCustomOpIsNamedWithHowToRegisterIt() throws {
        let directory = try CommandRunner.scratchDirectory()
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.fixture("selfie_segmentation.tflite"))))
        let (from, to) = (Array("Convolution2DTransposeBias".utf8), Array("Convolution2DTransposeBiaz".utf8))
        var replaced = 0
        for i in 0...(bytes.count - from.count) where Array(bytes[i..<i + from.count]) == from {
            bytes.replaceSubrange(i..<i + from.count, with: to)
            replaced += 1
        }
        #expect(replaced == 1)
        let model = "\(directory)/segmenter.tflite"
        try Data(bytes).write(to: URL(fileURLWithPath: model))
        let runner = CommandRunner()
        #expect(runner.run(["run", model, "--backend", "cpu"]) != 0)
        #expect(runner.error.contains("'Convolution2DTransposeBiaz'")
                && runner.error.contains("--layer Convolution2DTransposeBiaz='FORMULA'"), "\(runner.error)")
    }
}
