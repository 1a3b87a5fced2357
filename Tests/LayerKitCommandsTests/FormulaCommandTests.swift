import Foundation
import Testing
import LayerKit
@testable import LayerKitCommands

struct FormulaCommandTests {
    let directory: String
    init() throws { directory = try CommandRunner.scratchDirectory() }

    @Test func applyRunsAFormulaWithItsParameter() throws {
        let input = try Tensor.uniform(shape: [1, 2, 3, 4], in: -5...5, seed: 4)
        try input.writeNPY(to: "\(directory)/x.npy")
        let runner = CommandRunner()
        #expect(runner.run(["apply", "--expr", "max(x, alpha * x)", "--param", "alpha=0.1", "--input",
                            "\(directory)/x.npy", "--output", "\(directory)/y.npy", "--backend", "cpu"]) == 0,
                "\(runner.error)")
        let output = try Tensor(npyFile: "\(directory)/y.npy")
        for i in 0..<input.count { #expect(output[i] == max(input[i], 0.1 * input[i])) }
    }

    @Test(arguments: ["cpu", "gpu"])
    func aChainOfOpsIsTheOpsInTurn(backend: String) throws {
        let input = try Tensor.uniform(shape: [1, 3, 4, 5], in: -3...3, seed: 5).roundedToHalf()
        try input.writeNPY(to: "\(directory)/x.npy")
        let runner = CommandRunner()
        #expect(runner.run(["apply", "--op", "Linear", "--param", "scale=2", "--op", "Swish", "--param", "beta=0.5",
                            "--expr", "x - 1", "--input", "\(directory)/x.npy", "--output", "\(directory)/y.npy",
                            "--backend", backend]) == 0, "\(runner.error)")
        #expect(runner.out.contains("Linear+Swish+Formula"))
        let output = try Tensor(npyFile: "\(directory)/y.npy")
        for i in 0..<input.count {
            let z = 2 * Double(input[i])
            let reference = z / (1 + exp(-0.5 * z)) - 1
            let tolerance = backend == "gpu" ? 1e-3 : 1e-5
            #expect(abs(Double(output[i]) - reference) <= tolerance * max(1, abs(reference)), "x=\(input[i])")
        }
    }

    @Test(.enabled(if: gpuTestsEnabled))
    func parityChecksFormulasAndChains() throws {
        let runner = CommandRunner()
        #expect(runner.run(["parity", "--expr", "x * tanh(softplus(x))", "--shape", "1x5x6x7"]) == 0, "\(runner.out)")
        #expect(runner.run(["parity", "--op", "Elu", "--param", "alpha=0.5", "--op", "Tanh", "--shape", "2x3x4x5"]) == 0,
                "\(runner.out)")
    }

    static let badFormulaLines: [([String], String)] = [
        (["--expr", "x * tanhh(x)"], "formula column 5: unknown function 'tanhh'"),
        (["--expr", "max(x, alpha * x)"], "formula column 8: 'alpha' is used but not given"),
        (["--expr", "x", "--param", "beta=1"], "'beta' is given but the formula does not use it"),
        (["--expr", "(x + 1"], "formula column 7: expected ')'"),
        (["--param", "beta=1", "--op", "Swish"], "comes before any --op or --expr"),
        (["--op", "Swish", "--param", "beta=fast"], "must be a finite number"),
    ]

    @Test(arguments: badFormulaLines)
    func badFormulasAreOneLineErrors(layers: [String], message: String) throws {
        try Tensor(shape: [1, 1, 1, 2]).writeNPY(to: "\(directory)/x.npy")
        let runner = CommandRunner()
        #expect(runner.run(["apply"] + layers + ["--input", "\(directory)/x.npy", "--output", "\(directory)/y.npy"]) != 0)
        #expect(runner.error.contains(message), "\(runner.error)")
        #expect(runner.error.split(separator: "\n").count == 1, "\(runner.error)")
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/y.npy"))
    }
}
