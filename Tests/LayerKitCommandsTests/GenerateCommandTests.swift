import Foundation
import LayerKit
import Testing

/// `layerkit generate` on the tiny GPT-2 of `Scripts/generate_gpt2_fixture.py`
/// (2 layers, 4 heads, n_embd 64, vocab 256, exported with its KV cache):
/// the greedy ids are onnxruntime's KV-cache loop's exactly, on the CPU and
/// under `--backend gpu` (the fixture's seed leaves every step's top-1
/// margin at 0.108 or more, far above what fp16 storage moves a logit).
struct GenerateCommandTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("LayerKitTests/Fixtures/gpt2-kv")
    static let model = fixture.appendingPathComponent("model.onnx").path
    /// The run Docs/CLI.md shows, from the repository root.
    static let docArguments = "Tests/LayerKitTests/Fixtures/gpt2-kv/model.onnx --ids 17,93,5,201,42 --tokens 12 "
        + "--backend cpu --threads 1"

    /// `reference.json`: the prompt and onnxruntime's generated ids.
    struct Reference: Decodable {
        let prompt: [Int64]
        let ids: [Int64]
    }

    /// What `--json` prints, the fields the tests read.
    struct Record: Decodable {
        struct Phase: Decodable {
            let tokens: Int
            let tokensPerSecond: Double?
        }
        let schema: String
        let ids: [Int64]
        let loadMs: Double
        let prefill: Phase
        let decode: Phase
    }

    static func reference() throws -> Reference {
        try JSONDecoder().decode(Reference.self, from: Data(contentsOf: fixture.appendingPathComponent("reference.json")))
    }

    /// Runs `generate` on the fixture's prompt for all its reference ids on `backend`.
    private func generated(backend: String) throws -> Record {
        let reference = try Self.reference()
        let runner = CommandRunner()
        let status = runner.run(["generate", Self.model, "--ids", reference.prompt.map(String.init).joined(separator: ","),
                                 "--tokens", "\(reference.ids.count)", "--backend", backend, "--json"])
        try #require(status == 0, "\(runner.error)")
        return try JSONDecoder().decode(Record.self, from: Data(runner.out.utf8))
    }

    @Test func matchesOnnxruntimeOnTheCPU() throws {
        let record = try generated(backend: "cpu")
        #expect(record.schema == "layerkit-generate/1")
        #expect(record.ids == (try Self.reference().ids))
        #expect(record.prefill.tokens == 5)
        #expect(record.loadMs > 0)
        #expect(record.decode.tokens == (try Self.reference().ids.count) - 1)
        #expect((record.decode.tokensPerSecond ?? 0) > 0)
    }

    @Test(.enabled(if: gpuTestsEnabled)) func matchesOnnxruntimeUnderTheGPUBackend() throws {
        #expect(try generated(backend: "gpu").ids == (try Self.reference().ids))
    }

    @Test func printsTheIdsTheLoadAndBothSpeeds() throws {
        let runner = CommandRunner()
        #expect(runner.run(["generate", Self.model, "--ids", "17,93", "--tokens", "3", "--backend", "cpu"]) == 0)
        let lines = runner.out.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("ids: ") && $0.split(separator: ",").count == 3 })
        #expect(lines.contains { $0.hasPrefix("load: ") && $0.hasSuffix(" ms") })
        #expect(lines.contains { $0.hasPrefix("prefill: 2 tokens in ") && $0.hasSuffix("tokens/s)") })
        #expect(lines.contains { $0.hasPrefix("decode: 2 tokens in ") })
    }

    /// The cache grows by one per step from the same imported model: each
    /// step's present has one more position than its past (checked by
    /// `TokenGenerator`), and the ids of a run in two calls are those of one.
    @Test func theCacheGrowsWithoutAReimport() throws {
        let model = try Model(contentsOf: Self.fixture.appendingPathComponent("model.onnx"), computeUnits: .cpuOnly)
        let generator = try TokenGenerator(model: model)
        #expect(generator.layout.pairs.count == 4)
        #expect(generator.layout.pairs.allSatisfy { $0.sequenceAxis == 2 && $0.emptyShape == [1, 4, 0, 16] })
        let reference = try Self.reference()
        var input = reference.prompt
        for (step, expected) in reference.ids.enumerated() {
            #expect(try generator.next(after: input) == expected)
            #expect(generator.cachedTokens == reference.prompt.count + step)
            input = [expected]
        }
    }

    /// Each mistake: (words after the model, exit status, a phrase of the error).
    static let mistakes: [([String], Int32, String)] = [
        (["--ids", "1,2", "--tokens", "0"], 2, "--tokens 0: expected a whole number from 1"),
        (["--ids", "1,2", "--tokens", "1000000000"], 2, "--tokens 1000000000: expected a whole number from 1 to 100000"),
        (["--ids", "1,x", "--tokens", "2"], 2, "'x' is not a token id"),
        (["--ids", "1.5", "--tokens", "2"], 2, "'1.5' is not a token id"),
        (["--ids", "-3", "--tokens", "2"], 2, "'-3' is not a token id"),
        (["--ids", "", "--tokens", "2"], 2, "'' is not a token id"),
        (["--tokens", "2"], 2, "missing --ids"),
        (["--ids", "1,256", "--tokens", "2"], 1, "token id 256 is outside the model's vocabulary 0..<256"),
        (["--ids", "99999999999", "--tokens", "2"], 1, "outside the model's vocabulary"),
    ]

    @Test(arguments: mistakes.indices) func refusesAMistake(_ index: Int) {
        let (words, status, phrase) = Self.mistakes[index]
        let runner = CommandRunner()
        #expect(runner.run(["generate", Self.model, "--backend", "cpu"] + words) == status, "\(words)")
        #expect(runner.error.contains(phrase), "\(words): \(runner.error)")
        #expect(runner.out.isEmpty)
    }

    /// The fixture's position table has 128 rows: the step at position 128 fails, naming where it was.
    @Test func aRunPastTheContextSaysWhere() {
        let runner = CommandRunner()
        let prompt = Array(repeating: "7", count: 125).joined(separator: ",")
        #expect(runner.run(["generate", Self.model, "--ids", prompt, "--tokens", "10", "--backend", "cpu"]) == 1)
        #expect(runner.error.contains("1 token(s) after 128 in the cache (positions 128..<129): "), "\(runner.error)")
        #expect(runner.error.contains("out of range"), "\(runner.error)")
    }

    @Test func refusesAModelWithoutAKVCache() throws {
        let lstm = Self.fixture.deletingLastPathComponent().appendingPathComponent("recurrent/lstm_classifier_torchscript/model.onnx")
        let runner = CommandRunner()
        #expect(runner.run(["generate", lstm.path, "--ids", "1,2", "--tokens", "2", "--backend", "cpu"]) == 1)
        #expect(runner.error.contains("the model has no KV cache: expected outputs named present.N.key"), "\(runner.error)")
        #expect(runner.error.contains("inputs: "))
    }
}
