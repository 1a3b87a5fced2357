import Foundation
import Testing
import LayerKit
@testable import LayerKitCommands

struct ApplyCommandTests {
    let directory: String
    init() throws { directory = try CommandRunner.scratchDirectory() }

    func swishReference(_ x: Float, beta: Double) -> Double {
        Double(x) / (1 + exp(-beta * Double(x)))
    }

    @Test(arguments: ["cpu", "gpu", "auto"])
    func appliesSwishWithABetaParameter(backend: String) throws {
        let input = try Tensor.uniform(shape: [1, 3, 5, 7], in: -8...8, seed: 11).roundedToHalf()
        try input.writeNPY(to: "\(directory)/x.npy")
        let runner = CommandRunner()
        let status = runner.run(["apply", "--op", "swish", "--param", "beta=0.5", "--input", "\(directory)/x.npy",
                                 "--output", "\(directory)/y.npy", "--backend", backend])
        #expect(status == 0, "\(runner.error)")
        let output = try Tensor(npyFile: "\(directory)/y.npy")
        #expect(output.shape == [1, 3, 5, 7])
        let tolerance = backend == "gpu" ? 1e-3 : 1e-5
        for i in 0..<input.count {
            let reference = swishReference(input[i], beta: 0.5)
            #expect(abs(Double(output[i]) - reference) <= tolerance * max(1, abs(reference)))
        }
        #expect(runner.out.contains("wrote"))
    }

    @Test func appliesPerChannelBetaWeightsFromNPY() throws {
        let betas: [Float] = [0.5, 1, 2, 3, 0.25, 1.5]
        try writeNPY(betas, shape: [6], to: "\(directory)/beta.npy")
        let input = try Tensor.uniform(shape: [1, 6, 2, 3], in: -4...4, seed: 5)
        try input.writeNPY(to: "\(directory)/x.npy")
        let runner = CommandRunner()
        #expect(runner.run(["apply", "--op", "Swish", "--weights", "beta=\(directory)/beta.npy",
                            "--input", "\(directory)/x.npy", "--output", "\(directory)/y.npy",
                            "--backend", "cpu"]) == 0, "\(runner.error)")
        let output = try Tensor(npyFile: "\(directory)/y.npy")
        for i in 0..<input.count {
            let reference = swishReference(input[i], beta: Double(betas[i / 6]))
            #expect(abs(Double(output[i]) - reference) <= 1e-5 * max(1, abs(reference)))
        }
    }

    @Test func readsAPNGAndWritesAnActivationMap() throws {
        let source = try Tensor.uniform(shape: [1, 3, 8, 8], in: -2...2, seed: 1)
        try source.writeActivationPNG(to: "\(directory)/in.png")  // 1 channel grid image
        let runner = CommandRunner()
        #expect(runner.run(["apply", "--op", "swish", "--input", "\(directory)/in.png",
                            "--output", "\(directory)/out.png"]) == 0, "\(runner.error)")
        let picture = try Tensor(pngFile: "\(directory)/out.png")
        #expect(picture.shape[0] == 1 && picture.shape[1] == 1)
    }

    @Test func refusesToOverwriteItsInput() throws {
        try writeNPY([1, 2, 3], shape: [3], to: "\(directory)/x.npy")
        let before = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/x.npy"))
        let runner = CommandRunner()
        #expect(runner.run(["apply", "--op", "swish", "--input", "\(directory)/x.npy",
                            "--output", "\(directory)/./x.npy"]) == 1)
        #expect(runner.error.contains("refusing to overwrite"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/x.npy")) == before)
    }

    @Test func refusesToOverwriteItsWeights() throws {
        try writeNPY([1, 2, 3], shape: [1, 3, 1, 1], to: "\(directory)/x.npy")
        try writeNPY([0.5, 1, 2], shape: [3], to: "\(directory)/beta.npy")
        let before = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/beta.npy"))
        let runner = CommandRunner()
        #expect(runner.run(["apply", "--op", "swish", "--weights", "beta=\(directory)/beta.npy", "--input",
                            "\(directory)/x.npy", "--output", "\(directory)/beta.npy"]) == 1)
        #expect(runner.error.contains("refusing to overwrite"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/beta.npy")) == before)
    }

    /// Each bad command line: its exit status (2: the command line, values
    /// included; 1: a file) and a word its one-line error must contain.
    static let badInvocations: [([String], Int32, String)] = [
        (["apply", "--op", "Swoosh", "--input", "X", "--output", "Y.npy"], 2, "unknown op 'Swoosh' (did you mean 'Swish'?): no layer is registered by that name (layerkit ops lists them)"),
        (["apply", "--op", "swish", "--param", "alpha=1", "--input", "X", "--output", "Y.npy"], 2, "unknown parameter 'alpha'"),
        (["apply", "--op", "swish", "--param", "beta", "--input", "X", "--output", "Y.npy"], 2, "NAME=VALUE"),
        (["apply", "--op", "swish", "--param", "beta=fast", "--input", "X", "--output", "Y.npy"], 2, "must be a finite number"),
        (["apply", "--op", "swish", "--output", "Y.npy"], 2, "missing --input"),
        (["apply", "--op", "swish", "--input", "X"], 2, "missing --output"),
        (["apply", "--op", "swish", "--input", "X", "--output", "Y.npy", "--backend", "tpu"], 2, "cpu, gpu or auto"),
        (["apply", "--op", "swish", "--input", "X", "--output", "Y.txt"], 2, "unknown output type"),
        (["apply", "--op", "swish", "--input", "X", "--output", "Y.npy", "--frobnicate"], 2, "unknown option --frobnicate"),
        (["apply", "--op", "swish", "--weights", "gamma=w.npy", "--input", "X", "--output", "Y.npy"], 2, "no weights named 'gamma'"),
        (["transmogrify"], 2, "unknown command"),
        ([], 2, "usage"),
    ]

    @Test(arguments: badInvocations)
    func badCommandLinesFailWithOneClearLine(arguments: [String], status: Int32, message: String) throws {
        let runner = CommandRunner()
        let resolved = arguments.map { $0 == "X" ? "\(directory)/missing.npy" : $0 == "Y.npy" ? "\(directory)/y.npy" : $0 }
        #expect(runner.run(resolved) == status)
        #expect(runner.error.contains(message), "\(runner.error)")
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/y.npy"))
    }

    @Test func unreadableAndMalformedInputsAreErrors() throws {
        let runner = CommandRunner()
        #expect(runner.run(["apply", "--op", "swish", "--input", "\(directory)/absent.npy",
                            "--output", "\(directory)/y.npy"]) == 1)
        #expect(runner.error.contains("absent.npy"))
        try Data("not a numpy file".utf8).write(to: URL(fileURLWithPath: "\(directory)/bad.npy"))
        #expect(runner.run(["apply", "--op", "swish", "--input", "\(directory)/bad.npy",
                            "--output", "\(directory)/y.npy"]) == 1)
        #expect(runner.error.split(separator: "\n").count == 2)
    }

    @Test(arguments: ["cpu", "gpu"])
    func weightsOfTheWrongLengthAreAnError(backend: String) throws {
        try writeNPY([1, 2, 3, 4, 5], shape: [5], to: "\(directory)/beta.npy")
        try Tensor(shape: [1, 6, 2, 2]).writeNPY(to: "\(directory)/x.npy")
        let runner = CommandRunner()
        #expect(runner.run(["apply", "--op", "swish", "--weights", "beta=\(directory)/beta.npy", "--input",
                            "\(directory)/x.npy", "--output", "\(directory)/y.npy", "--backend", backend]) == 1)
        #expect(runner.error.contains("5") && runner.error.contains("6"), "\(runner.error)")
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/y.npy"))
    }
}
