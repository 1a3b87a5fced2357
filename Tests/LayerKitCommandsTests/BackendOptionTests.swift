import Foundation
import LayerKit
import Testing
@testable import LayerKitCommands

/// `--backend` takes the same words in every command that computes, parsed
/// by one function; `both` only where the command compares.
struct BackendOptionTests {
    /// Each computing command, with what it needs besides `--backend`.
    static func commands() throws -> [String: [String]] {
        let directory = try CommandRunner.scratchDirectory()
        try writeNPY([-1, 0, 1, 2], shape: [1, 1, 2, 2], to: "\(directory)/x.npy")
        let model = ModelCommandTests.fixture("small_cnn.onnx")
        return [
            "apply": ["apply", "--op", "Swish", "--input", "\(directory)/x.npy", "--output", "\(directory)/y.npy"],
            "inspect": ["inspect", model],
            "run": ["run", model, "--input", ModelCommandTests.fixture("small_cnn.input.npy")],
            "bench": ["bench", "--op", "Relu", "--shape", "1x2x4x4", "--repeat", "1", "--warmup", "0"],
            "profile": ["profile", "--op", "Swish", "--shape", "1x2x4x4", "--repeat", "1", "--warmup", "0"],
            "profile model": ["profile", model, "--repeat", "1", "--warmup", "0"],
        ]
    }

    @Test func theWordsMapToComputeUnits() throws {
        #expect(try ValueParsing.backend("cpu") == .cpuOnly)
        #expect(try ValueParsing.backend("GPU") == .gpu)
        #expect(try ValueParsing.backend("auto") == .automatic)
        #expect(try ValueParsing.backendOrBoth("both") == nil)
        #expect(try ValueParsing.backendOrBoth("gpu") == .gpu)
        #expect(throws: UsageError.self) { try ValueParsing.backend("both") }
        #expect(throws: UsageError.self) { try ValueParsing.backendOrBoth("all") }
    }

    @Test(arguments: ["apply", "inspect", "run", "bench", "profile", "profile model"])
    func aBadWordIsAUsageErrorNamingTheWords(command: String) throws {
        let words = try #require(try Self.commands()[command])
        let runner = CommandRunner()
        #expect(runner.run(words + ["--backend", "tpu"]) == 2, "\(runner.out)")
        let expected = command == "bench" ? "--backend tpu: expected cpu, gpu, auto or both"
                                          : "--backend tpu: expected cpu, gpu or auto"
        #expect(runner.error.contains(expected), "\(runner.error)")
        #expect(runner.out.isEmpty)
    }

    @Test(arguments: ["apply", "inspect", "run", "profile", "profile model"])
    func bothIsOnlyForComparisons(command: String) throws {
        let words = try #require(try Self.commands()[command])
        let runner = CommandRunner()
        #expect(runner.run(words + ["--backend", "both"]) == 2)
        #expect(runner.error.contains("expected cpu, gpu or auto"), "\(runner.error)")
    }

    @Test(arguments: ["apply", "inspect", "run", "bench", "profile", "profile model"])
    func everyCommandTakesCPUAndAuto(command: String) throws {
        let words = try #require(try Self.commands()[command])
        for word in ["cpu", "auto"] {
            let runner = CommandRunner()
            #expect(runner.run(words + ["--backend", word]) == 0, "\(command) --backend \(word): \(runner.error)")
        }
    }

    @Test(.enabled(if: gpuTestsEnabled), arguments: ["apply", "inspect", "run", "bench", "profile", "profile model"])
    func everyCommandTakesGPU(command: String) throws {
        let words = try #require(try Self.commands()[command])
        let runner = CommandRunner()
        #expect(runner.run(words + ["--backend", "gpu"]) == 0, "\(command) --backend gpu: \(runner.error)")
    }

    @Test(.enabled(if: gpuTestsEnabled)) func benchBothMeasuresTheCPUAndTheGPU() throws {
        let words = try #require(try Self.commands()["bench"])
        let runner = CommandRunner()
        #expect(runner.run(words + ["--backend", "both"]) == 0, "\(runner.error)")
        #expect(runner.out.contains("cpu kernel") && runner.out.contains("gpu kernel"), "\(runner.out)")
        let cpuOnly = CommandRunner()
        #expect(cpuOnly.run(words + ["--backend", "cpu"]) == 0)
        #expect(cpuOnly.out.contains("cpu kernel") && !cpuOnly.out.contains("gpu kernel"))
    }
}
