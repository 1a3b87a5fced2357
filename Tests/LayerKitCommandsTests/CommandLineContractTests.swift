import Foundation
import LayerKit
import Testing
@testable import LayerKitCommands

/// What the command line promises a user: help per command, a version,
/// "did you mean", clear errors for mistakes, exit 2 for the command line
/// and 1 for files, models and devices, one line on standard error.
struct CommandLineContractTests {
    static let article = ModelCommandTests.fixture("article_beta1.onnx")

    @Test(arguments: CommandHelp.all.map(\.name))
    func everyCommandHasItsOwnHelp(_ name: String) {
        for words in [[name, "--help"], ["help", name], [name.uppercased(), "-h"]] {
            let runner = CommandRunner()
            #expect(runner.run(words) == 0, "\(words): \(runner.error)")
            #expect(runner.out.hasPrefix("usage: layerkit \(name) "), "\(words)")
            #expect(runner.out.contains("example"))
            for option in CommandHelp.named(name)!.options {
                #expect(runner.out.contains("  \(option.name)"), "\(name) help lacks \(option.name)")
            }
            #expect(runner.out.split(separator: "\n").allSatisfy { $0.count <= 100 }, "\(name) help is wider than 100")
        }
    }

    @Test func theGeneralHelpListsEveryOptionOfEveryCommand() {
        let runner = CommandRunner()
        #expect(runner.run(["help"]) == 0)
        for command in CommandHelp.all {
            let start = runner.out.range(of: "  layerkit \(command.name)")!
            let section = runner.out[start.lowerBound...].prefix(800)
            for option in command.options { #expect(section.contains(option.name), "\(command.name): \(option.name)") }
        }
        let profile = runner.out[runner.out.range(of: "  layerkit profile")!.lowerBound...].prefix(800)
        #expect(profile.contains("--repeat") && profile.contains("--warmup"))
    }

    @Test func versionNamesThePackageVersionAndCommit() throws {
        let runner = CommandRunner()
        #expect(runner.run(["--version"]) == 0)
        #expect(runner.out.hasPrefix("layerkit \(LayerKitVersion.number) (commit "))
        let commit = LayerKitVersion.commit
        #expect(commit == "unknown" || (commit.count == 40 && commit.allSatisfy(\.isHexDigit)), "\(commit)")
        let process = try CommandRunner.runExecutable(["--version"], environment: [:])
        #expect(process.status == 0 && process.out == runner.out)
    }

    @Test func typosGetTheClosestName() {
        let cases: [([String], String)] = [
            (["rnu"], "unknown command 'rnu' (did you mean 'run'?"),
            (["ops", "--markdwn"], "did you mean --markdown?"),
            (["apply", "--op", "Swishh", "--input", "x.npy", "--output", "y.npy"], "did you mean 'Swish'?"),
            (["ops", "Swishh"], "did you mean 'Swish'?"),
        ]
        for (words, message) in cases {
            let runner = CommandRunner()
            #expect(runner.run(words) == 2, "\(words)")
            #expect(runner.error.contains(message), "\(words): \(runner.error)")
        }
        // Command names match in any letter case, as op names do.
        #expect(CommandRunner().run(["OPS", "swish"]) == 0)
    }

    @Test func mistakesOnTheCommandLineAreErrorsWithExitStatus2() throws {
        let directory = try CommandRunner.scratchDirectory()
        let input = ModelCommandTests.fixture("article_beta1.input.npy")
        let cases: [([String], String)] = [
            // Several plain files for a one-input model are a batch (each runs); one name given twice is a mistake.
            (["run", Self.article, "--input", "image=\(input)", "--input", "image=\(input)"], "input 'image' already has"),
            (["run", Self.article, "--input", input, "--output", "foo=\(directory)/y.npy"], "the model has no output 'foo'"),
            (["run", Self.article, "--input", "imag=x.png"], "the model has no input 'imag' (did you mean 'image'?)"),
            (["run", Self.article, "--input", input, "--backend", "cpu", "--backend", "gpu"], "--backend is given twice"),
            (["devices", "extra"], "unexpected argument 'extra'"),
            (["inspect", Self.article, "extra"], "unexpected argument 'extra'"),
            (["run", Self.article, "--input", input, "--normalize", "0,2"], "--normalize: pixel normalization '0,2'"),
            (["run", Self.article, "--input", input, "--resize", "64x"], "--resize 64x"),
            (["apply", "--op", "Swish", "--param", "beta=abc", "--input", input, "--output", "\(directory)/y.npy"], "beta"),
            (["apply", "--expr", "x *", "--input", input, "--output", "\(directory)/y.npy"], "column"),
        ]
        for (words, message) in cases {
            let runner = CommandRunner()
            #expect(runner.run(words) == 2, "\(words): \(runner.error)")
            #expect(runner.error.contains(message), "\(words): \(runner.error)")
            #expect(runner.error.split(separator: "\n").count == 1, "\(words): \(runner.error)")
        }
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/y.npy"))
    }

    @Test func anErrorAfterAFallbackNoticeIsStillOneLine() throws {
        // `auto` announces where layers run while loading; the missing file fails after it (exit 1: a file).
        let runner = CommandRunner()
        #expect(runner.run(["run", Self.article, "--input", "/nonexistent/x.npy", "--backend", "auto"]) == 1)
        #expect(runner.error.split(separator: "\n").count == 1, "\(runner.error)")
        #expect(runner.error.hasPrefix("layerkit: error: "))
    }

    @Test func aGrayImageIsFittedToRGBWithANotice() throws {
        let directory = try CommandRunner.scratchDirectory()
        try Tensor(shape: [1, 1, 32, 32], values: (0..<1024).map { Float($0) }).writeActivationPNG(to: "\(directory)/g.png")
        let runner = CommandRunner()
        #expect(runner.run(["run", Self.article, "--input", "\(directory)/g.png", "--backend", "cpu"]) == 0, "\(runner.error)")
        #expect(runner.error == "layerkit: \(directory)/g.png is gray: its channel is repeated into the 3 channels "
                + "of input 'image'\n")
    }

    @Test func opsFitsOneHundredColumnsAndShowsOneOpInDetail() {
        let all = CommandRunner()
        #expect(all.run(["ops"]) == 0)
        #expect(all.out.split(separator: "\n").allSatisfy { $0.count <= 100 })
        let one = CommandRunner()
        #expect(one.run(["ops", "Swish"]) == 0)
        for text in ["op:                    Swish", "parameters (defaults): beta=1", "per-channel weights:   beta",
                     "formula:               y = x * sigmoid(beta * x)", "GPU kernel:            yes", "example:"] {
            #expect(one.out.contains(text), "\(one.out)")
        }
        #expect(!one.out.contains("Relu"))
        #expect(CommandRunner().run(["ops", "Swish", "Relu"]) == 2)
    }
}
