import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitCommands

/// `--threads N` on every command that computes (`layerkit --help` lists
/// them: apply, parity, run, train, demo, bench, profile, conformance, and inspect,
/// whose loading folds constants by evaluating layers): 0 is refused with a
/// message naming the option before anything runs, and 1 runs, every CPU
/// loop on one thread (seen through `CPUThreads.observer`).
struct ThreadsOptionTests {
    let directory: String
    init() throws { directory = try CommandRunner.scratchDirectory() }

    static let model = ModelCommandTests.fixture("small_cnn.onnx")
    static let input = ModelCommandTests.fixture("small_cnn.input.npy")
    static let cases = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../LayerKitTests/Fixtures/onnx-cases/core").standardized.path

    /// Each command, with the arguments of a small run.
    func commands() throws -> [(name: String, arguments: [String])] {
        let x = "\(directory)/x.npy"
        try Tensor.uniform(shape: [1, 4, 8, 8], in: -3...3, seed: 2).writeNPY(to: x)
        return [
            ("apply", ["apply", "--op", "Swish", "--input", x, "--output", "\(directory)/y.npy", "--backend", "cpu"]),
            ("parity", ["parity", "--op", "Swish", "--shape", "1x4x8x8"]),
            ("run", ["run", Self.model, "--input", Self.input, "--backend", "cpu"]),
            ("train", TrainCommandRunTests.student(output: "\(directory)/trained.onnx", ["--epochs", "1", "--backend", "cpu"])),
            ("demo", ["demo"]),
            ("bench", ["bench", "--op", "Swish", "--shape", "1x4x8x8", "--repeat", "1", "--warmup", "0", "--backend", "cpu"]),
            ("profile", ["profile", Self.model, "--input", Self.input, "--repeat", "1", "--warmup", "0", "--backend", "cpu"]),
            ("conformance", ["conformance", Self.cases, "--backend", "cpu"]),
            ("inspect", ["inspect", Self.model, "--backend", "cpu"]),
            ("generate", ["generate", GenerateCommandTests.model, "--ids", "1,2", "--tokens", "2", "--backend", "cpu"]),
        ]
    }

    /// The commands `--help` lists that compute, each covered here; the
    /// others (devices, ops) compute nothing.
    @Test func everyCommandThatComputesTakesThreads() throws {
        let covered = Set(try commands().map(\.name))
        for command in CommandHelp.all where !["devices", "ops"].contains(command.name) {
            #expect(covered.contains(command.name), "\(command.name) is not covered")
            #expect(command.options.contains { $0.name == "--threads" }, "\(command.name) takes no --threads")
        }
    }

    @Test func zeroIsRefusedAndOneRunsOnOneThread() throws {
        for (name, arguments) in try commands() {
            let refused = CommandRunner()
            #expect(refused.run(arguments + ["--threads", "0"]) == 2, "\(name): \(refused.error)")
            #expect(refused.error.contains("--threads 0: expected a whole number from 1 to 4096"), "\(name): \(refused.error)")
            let runner = CommandRunner()
            let observer = CPUThreadObserver()
            let status = CPUThreads.$observer.withValue(observer) { runner.run(arguments + ["--threads", "1"]) }
            #expect(status == 0, "\(name): \(runner.error)")
            #expect(observer.peakWorkers <= 1, "\(name): a loop ran on \(observer.peakWorkers) threads")
        }
    }
}
