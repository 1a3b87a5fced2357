import Foundation
import Testing
import LayerKit
@testable import LayerKitCommands

/// Every command output shown in README.md and Docs/*.md sits between
/// `<!-- output:begin layerkit ARGS -->` and `<!-- output:end -->` and is what
/// `Scripts/update-doc-outputs` wrote: a fenced block of `$ layerkit ARGS` and the
/// command's standard output. This test runs each command in-process and compares.
///
/// What is compared: every character of the block, except for the commands that
/// print timings (`demo`, `profile`, `bench`, `generate`): there, from the first line holding
/// the word `ms` to the end, every decimal number (digits, a point, digits, with a
/// `%` after it if there is one) is replaced by `#` and runs of spaces by one space,
/// in the document and in the output alike. The lines before it (the demo's
/// predictions and parity verdict, the profile's heading) are compared exactly,
/// but for the instruction set the CPU evaluator picked (`CPU evaluator: avx2+fma`),
/// which is the machine's: it becomes `#` too.
/// `train` prints each epoch's wall time at the end of its line (`  1.23 s`):
/// that time alone becomes `#`; its losses are compared exactly.
struct DocOutputTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    struct Block: CustomStringConvertible, Sendable {
        let file: String
        let arguments: [String]
        let shown: String
        var description: String { "\(file): layerkit \(arguments.joined(separator: " "))" }
    }

    /// The documents the generated blocks may be in.
    static func documents() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "Docs/\($0)" }
        return ["README.md"] + docs
    }

    static func blocks() throws -> [Block] {
        var found: [Block] = []
        for file in try documents() {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            var rest = text[...]
            while let begin = rest.range(of: "<!-- output:begin layerkit ") {
                let header = rest[begin.upperBound...]
                // The end is looked for after the header's close: a marker named in prose
                // (no close before the next block's end) must not pair a close with an earlier end.
                guard let close = header.range(of: " -->\n"),
                      let end = header[close.upperBound...].range(of: "<!-- output:end -->") else { break }
                let arguments = header[..<close.lowerBound].split(separator: " ").map(String.init)
                found.append(Block(file: file, arguments: arguments,
                                   shown: String(header[close.upperBound..<end.lowerBound])))
                rest = header[end.upperBound...]
            }
        }
        return found
    }

    /// The block `Scripts/update-doc-outputs` writes for a command's output.
    static func rendered(_ arguments: [String], output: String) -> String {
        "```\n$ layerkit \(arguments.joined(separator: " "))\n\(output)```\n"
    }

    static let timedCommands: Set<String> = ["demo", "profile", "bench", "generate"]

    /// The timing mask described above.
    static func masked(_ text: String) -> String {
        var timed = false
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            if !timed, line.range(of: #"\bms\b"#, options: .regularExpression) != nil { timed = true }
            guard timed else {
                return line.replacingOccurrences(of: #"^CPU evaluator: [a-z0-9+]+"#, with: "CPU evaluator: #",
                                                 options: .regularExpression)
            }
            return line.replacingOccurrences(of: #"[0-9]+\.[0-9]+%?"#, with: "#", options: .regularExpression)
                .replacingOccurrences(of: " +", with: " ", options: .regularExpression)
        }.joined(separator: "\n")
    }

    /// The commands the docs show: deleting a block's markers fails here.
    @Test func theDocsShowTheGeneratedOutputs() throws {
        let shown = try Self.blocks().map { "\($0.file): \($0.arguments.joined(separator: " "))" }
        for expected in ["README.md: demo", "README.md: parity --op swish",
                         "README.md: profile --op Swish --backend cpu --shape 1x64x128x128 --threads 1",
                         "Docs/CLI.md: help run", "Docs/CLI.md: help train",
                         "Docs/CLI.md: generate \(GenerateCommandTests.docArguments)"] {
            #expect(shown.contains(expected), "no generated block for \(expected); found \(shown)")
        }
    }

    @Test(arguments: try DocOutputTests.blocks())
    func eachShownOutputIsTheCommands(block: Block) throws {
        let usesGPU = ["demo", "parity"].contains(block.arguments.first ?? "") || block.arguments.contains("gpu")
        guard gpuTestsEnabled || !usesGPU else { return }
        let runner = CommandRunner()
        let status = runner.run(block.arguments)
        #expect(status == 0, "\(block): \(runner.error)")
        var expected = Self.rendered(block.arguments, output: runner.out)
        var shown = block.shown
        if Self.timedCommands.contains(block.arguments.first ?? "") {
            expected = Self.masked(expected)
            shown = Self.masked(shown)
        }
        if block.arguments.first == "train" {
            expected = Self.maskedEpochTimes(expected)
            shown = Self.maskedEpochTimes(shown)
        }
        #expect(shown == expected, "\(block) differs from the command's output: run Scripts/update-doc-outputs")
    }

    /// `train`'s epoch lines with their times masked.
    static func maskedEpochTimes(_ text: String) -> String {
        text.replacingOccurrences(of: #"(?m)^(epoch [0-9]+/[0-9]+  loss [^ ]+  )[0-9]+\.[0-9]+ s$"#, with: "$1# s",
                                  options: .regularExpression)
    }

    @Test func theEpochMaskHidesOnlyTheTimes() {
        #expect(Self.maskedEpochTimes("epoch 2/5  loss 0.1234  1.23 s\nwrote 1.5 s\n")
                == "epoch 2/5  loss 0.1234  # s\nwrote 1.5 s\n")
    }

    @Test func theMaskHidesTimesOnlyFromTheFirstTimedLine() {
        let text = "value 0.446540\ntime ms\nconv   0.497   12.206  GPU 93.7%\n"
        #expect(Self.masked(text) == "value 0.446540\ntime ms\nconv # # GPU #\n")
    }
}
