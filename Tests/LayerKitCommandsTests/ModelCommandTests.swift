import Foundation
import LayerKit
import Testing

/// `layerkit inspect` and `layerkit run` on the fixture models of
/// `Scripts/generate_model_fixtures.py` (onnxruntime's outputs beside them).
struct ModelCommandTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("LayerKitTests/Fixtures/models")

    static func fixture(_ name: String) -> String { fixtures.appendingPathComponent(name).path }

    @Test func inspectListsInputsOutputsAndWhereEachNodeRuns() {
        let runner = CommandRunner()
        #expect(runner.run(["inspect", Self.fixture("article_perchannel.onnx"), "--backend", "cpu"]) == 0, "\(runner.error)")
        for text in ["opsets: ai.onnx 17, layerkit 1", "image", "1x3x32x32", "probabilities", "1x10", "FLOAT",
                     "nodes (6):", "layerkit.Swish", "GlobalAveragePool", "CPU only"] {
            #expect(runner.out.contains(text), "missing \(text)")
        }
    }

    /// A model LayerKit cannot run is listed whole: every node, every
    /// refusal counted (an unregistered custom op twice, and ImageDecoder,
    /// a standard op LayerKit lacks, after a refused node), exit 1.
    @Test func inspectListsEveryRefusalWithItsCount() throws {
        let runner = CommandRunner()
        #expect(runner.run(["inspect", Self.fixture("unsupported_mix.onnx"), "--backend", "cpu"]) == 1)
        for text in ["nodes (5):", "relu", "runs", "sharpen1", "REFUSED: a custom layer implementation for op type 'Sharpen'",
                     "REFUSED: op 'ImageDecoder' is not supported", "add", "not reached (reads 'c')",
                     "cannot run: 3 nodes refused for 2 reasons, 1 not reached after them:",
                     "2      Sharpen: a custom layer implementation for op type 'Sharpen' (domain 'com.example') was not found",
                     "1      ImageDecoder: op 'ImageDecoder' is not supported by LayerKit",
                     "parameters: 0 (0 B of weights)"] {
            #expect(runner.out.contains(text), "missing \(text) in \(runner.out)")
        }
        let json = CommandRunner()
        #expect(json.run(["inspect", Self.fixture("unsupported_mix.onnx"), "--json"]) == 1)
        let record = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        let unsupported = try #require(record["unsupported"] as? [[String: Any]])
        #expect(unsupported.map { $0["count"] as? Int } == [2, 1])
        #expect((record["nodes"] as? [[String: Any]])?.count == 5)
    }

    @Test func inspectCountsParametersAndWeightBytes() {
        let runner = CommandRunner()
        #expect(runner.run(["inspect", Self.fixture("small_cnn.onnx"), "--backend", "cpu"]) == 0, "\(runner.error)")
        // The onnx package's count of the initializers' elements and bytes (numpy_helper.to_array).
        #expect(runner.out.contains("parameters: 4140 (16.6 kB of weights)"), "\(runner.out)")
    }

    @Test func inspectFootnotesWhyLayersRunOnTheCPU() throws {
        let runner = CommandRunner()
        #expect(runner.run(["inspect", Self.fixture("article_beta1.onnx"), "--backend", "auto"]) == 0, "\(runner.error)")
        // On lavapipe `auto` keeps every layer on the CPU, with one footnote saying why.
        // A device that cannot be opened here is a failure with its reason, not a silent "not emulated".
        let emulated = try GPUContext().deviceInfo.kind == .cpu
        #expect(runner.out.contains("CPU [1]") == emulated)
        #expect(runner.out.contains("[1] the Vulkan device") == emulated)
    }

    @Test func runWritesTheOutputOnnxRuntimeComputed() throws {
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        let status = runner.run(["run", Self.fixture("small_cnn.onnx"), "--input", Self.fixture("small_cnn.input.npy"),
                                 "--output", "\(directory)/y.npy", "--backend", "cpu"])
        #expect(status == 0, "\(runner.error)")
        #expect(runner.out.contains("output 'probabilities': 1x16"))
        #expect(runner.out.contains("top-5: "))
        let output = try Tensor(npyFile: "\(directory)/y.npy")
        let expected = try Tensor(npyFile: Self.fixture("small_cnn.expected.npy"))
        #expect(output.shape == [1, 16])
        for (a, e) in zip(output.values, expected.values) { #expect(abs(a - e) <= 1e-4 * max(1e-6, abs(e))) }
        // The top class is onnxruntime's.
        let top = expected.values.indices.max { expected[$0] < expected[$1] }!
        #expect(runner.out.contains("top-5: \(top) ("))
    }

    @Test func runTakesAPNGResizedNormalizedAndFittedToRGB() throws {
        let directory = try CommandRunner.scratchDirectory()
        // A gray 20x10 picture (LayerKit's activation PNG of a gradient).
        let gray = try Tensor(shape: [1, 1, 10, 20], values: (0..<200).map { Float($0) })
        try gray.writeActivationPNG(to: "\(directory)/in.png")
        let runner = CommandRunner()
        #expect(runner.run(["run", Self.fixture("article_beta1.onnx"), "--input", "\(directory)/in.png",
                            "--resize", "32x32", "--normalize", "-1,1", "--output", "\(directory)/p.npy",
                            "--backend", "cpu"]) == 0, "\(runner.error)")
        // The same preprocessing through the library gives the same answer.
        let steps = ImageInputOptions(resize: .stretch(.init(width: 32, height: 32)), normalization: .signed)
        let image = try steps.prepare(try Tensor(pngFile: "\(directory)/in.png"))
        let rgb = try Tensor(shape: [1, 3, 32, 32], values: Array(repeating: image.values, count: 3).flatMap { $0 })
        let model = try Model(contentsOf: URL(fileURLWithPath: Self.fixture("article_beta1.onnx")), computeUnits: .cpuOnly)
        let expected = try #require(try model.predict(inputs: ["image": rgb])["probabilities"])
        #expect(try Tensor(npyFile: "\(directory)/p.npy").values == expected.values)
        // Without --resize the size mismatch is explained.
        let again = CommandRunner()
        #expect(again.run(["run", Self.fixture("article_beta1.onnx"), "--input", "\(directory)/in.png"]) == 1)
        #expect(again.error.contains("--resize 32x32"))
    }

    @Test func runRefusesBadInputAndKeepsTheUsersFiles() throws {
        let directory = try CommandRunner.scratchDirectory()
        let input = "\(directory)/x.npy"
        try FileManager.default.copyItem(atPath: Self.fixture("article_beta1.input.npy"), toPath: input)
        let original = try Data(contentsOf: URL(fileURLWithPath: input))
        let truncated = "\(directory)/cut.onnx"
        let model = try Data(contentsOf: URL(fileURLWithPath: Self.fixture("article_beta1.onnx")))
        try model.prefix(model.count / 2).write(to: URL(fileURLWithPath: truncated))
        let model1 = Self.fixture("article_beta1.onnx")
        let cases: [([String], Int32, String)] = [
            (["run", model1], 2, "missing --input"),
            (["run", model1, "--input", input, "--output", input], 1, "refusing to overwrite"),
            (["run", model1, "--input", "nope=\(input)"], 2, "the model has no input 'nope'"),
            (["run", truncated, "--input", input], 1, "runs past the end"),
            (["run", model1, "--input", input, "--normalize", "mean=1"], 2, "--normalize: pixel normalization 'mean=1': expected"),
            (["run", model1, "--input", input, "--resize", "0x5"], 2, "--resize 0x5"),
            (["run", Self.fixture("custom_missing.onnx"), "--input", input], 1, "custom layer implementation"),
            (["inspect"], 2, "expected one model file"),
        ]
        for (words, status, message) in cases {
            let runner = CommandRunner()
            #expect(runner.run(words) == status, "\(words): \(runner.error)")
            #expect(runner.error.contains(message), "\(words): \(runner.error)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: input)) == original)
    }
}
