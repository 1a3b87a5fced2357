import Foundation
import Testing
import LayerKit
@testable import LayerKitCommands

/// Issue 14's classes 1, 6, 11, 12, 13 and 14 through the CLI: outputs are
/// compared with inputs by identity, counts and ranges are bounded, long
/// names work, non-regular files are refused by what they are, and nothing
/// from a file reaches the terminal unescaped. Each test has a control that
/// must succeed, so a refusal cannot pass by refusing everything.
struct HostileInputTests {
    let directory: String
    init() throws { directory = try CommandRunner.scratchDirectory() }

    static let model = ModelCommandTests.fixture("article_beta1.onnx")
    static let modelInput = ModelCommandTests.fixture("article_beta1.input.npy")

    func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    /// The values of a `.npy` file, copied while its tensor is alive.
    func npyValues(_ path: String) throws -> [Float] {
        let tensor = try Tensor(npyFile: path)
        return (0..<tensor.count).map { tensor[$0] }
    }

    // MARK: files that are no model

    /// A picture, an array, a checkpoint or text given as the model is named
    /// as what it is, with the formats LayerKit reads; the control model runs.
    @Test func aFileThatIsNoModelIsNamedAsWhatItIs() throws {
        let files: [(name: String, bytes: [UInt8], says: String)] = [
            ("x.onnx", try [UInt8](bytes(Self.modelInput)), "is a NumPy array (.npy), not a model"),
            ("picture.onnx", [0x89] + Array("PNG\r\n\u{1A}\n".utf8) + [UInt8](repeating: 0, count: 40), "is a PNG picture"),
            ("photo.mlmodel", [0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 0, count: 40), "is a JPEG picture"),
            ("resnet.pt", Array("PK".utf8) + [3, 4] + [UInt8](repeating: 0, count: 40), "is a zip archive (PyTorch's .pt"),
            ("model.pkl", [0x80, 4, 0x95] + [UInt8](repeating: 0, count: 20), "is a Python pickle"),
            ("notes.onnx", Array("hello world\n".utf8), "is not a model file"),
            ("empty.onnx", [], "is empty, not a model"),
        ]
        for file in files {
            let path = "\(directory)/\(file.name)"
            try Data(file.bytes).write(to: URL(fileURLWithPath: path))
            let runner = CommandRunner()
            #expect(runner.run(["run", path, "--backend", "cpu"]) == 1, "\(file.name)")
            #expect(runner.error.contains(file.says) && runner.error.contains("LayerKit reads ONNX (.onnx), Core ML"),
                    "\(file.name): \(runner.error)")
        }
        let control = CommandRunner()
        #expect(control.run(["run", Self.model, "--input", Self.modelInput, "--backend", "cpu"]) == 0, "\(control.error)")
    }

    // MARK: 1, data loss

    @Test func runComparesTheFileTheReaderReadsNotTheSpecsText() throws {
        // The case: "lr" is no input name, so `lr=0.1.npy` is the file; the output spec splits at its first `=`.
        let input = "\(directory)/lr=0.1.npy"
        try FileManager.default.copyItem(atPath: Self.modelInput, toPath: input)
        let original = try bytes(input)
        let runner = CommandRunner()
        #expect(runner.run(["run", Self.model, "--input", input, "--output", "probabilities=\(input)",
                            "--backend", "cpu"]) == 1)
        #expect(runner.error.contains("refusing to overwrite"), "\(runner.error)")
        #expect(try bytes(input) == original)
        // Control: the same syntax to another file is written.
        let control = CommandRunner()
        #expect(control.run(["run", Self.model, "--input", input, "--output", "probabilities=\(directory)/lr=0.2.npy",
                             "--backend", "cpu"]) == 0, "\(control.error)")
        #expect(try Tensor(npyFile: "\(directory)/lr=0.2.npy").shape == [1, 10])
    }

    @Test func applyComparesBySymlinkResolvedIdentity() throws {
        let input = "\(directory)/x.npy"
        try writeNPY([1, -2, 3], shape: [1, 3], to: input)
        let original = try bytes(input)
        try FileManager.default.createDirectory(atPath: "\(directory)/sub/deep", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: "\(directory)/l", withDestinationPath: "\(directory)/sub/deep")
        try FileManager.default.linkItem(atPath: input, toPath: "\(directory)/hard.npy")
        // `l/..` is `sub` (the kernel's `..`, after the link), so `l/../../x.npy` is the input; `l/../x.npy` is
        // the shape of the mistake with one more level.
        for output in ["\(directory)/l/../../x.npy", "\(directory)/hard.npy", "\(directory)/./x.npy"] {
            let runner = CommandRunner()
            #expect(runner.run(["apply", "--op", "Relu", "--input", input, "--output", output, "--backend", "cpu"]) == 1,
                    "\(output)")
            #expect(runner.error.contains("refusing to overwrite"), "\(output): \(runner.error)")
        }
        #expect(try bytes(input) == original)
        // Control: textually `..` of `l` would be the scratch directory; by identity it is `sub`, which is written.
        let control = CommandRunner()
        #expect(control.run(["apply", "--op", "Relu", "--input", input, "--output", "\(directory)/l/../x.npy",
                             "--backend", "cpu"]) == 0, "\(control.error)")
        #expect(try npyValues("\(directory)/sub/x.npy") == [1, 0, 3] as [Float])
        #expect(try bytes(input) == original)
    }

    // MARK: 11, long names

    @Test func outputNamesUpToTheFileSystemsLimitAreWritten() throws {
        let input = "\(directory)/x.npy"
        try writeNPY([1, -2], shape: [1, 2], to: input)
        for fallback in ["0", "1"] {
            let name = String(repeating: "a", count: 250 - 4) + ".npy"  // 250 bytes, NAME_MAX is 255
            let result = try CommandRunner.runExecutable(
                ["apply", "--op", "Relu", "--input", input, "--output", "\(directory)/\(name)", "--backend", "cpu"],
                environment: ["LAYERKIT_ATOMIC_FALLBACK": fallback])
            #expect(result.status == 0, "fallback \(fallback): \(result.error)")
            #expect(try npyValues("\(directory)/\(name)") == [1, 0] as [Float])
            try FileManager.default.removeItem(atPath: "\(directory)/\(name)")
        }
        // Control: a name over the limit is the file system's refusal, said as such.
        let tooLong = String(repeating: "b", count: 256 - 4) + ".npy"
        let runner = CommandRunner()
        #expect(runner.run(["apply", "--op", "Relu", "--input", input, "--output", "\(directory)/\(tooLong)"]) == 1)
        #expect(runner.error.contains("File name too long"), "\(runner.error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["x.npy"])
    }

    // MARK: 6, command-line values

    @Test func hugeCountsAndInfiniteRangesAreUsageErrors() {
        let cases: [[String]] = [
            ["parity", "--op", "Relu", "--range=-3.4e38,3.4e38"],
            ["bench", "--op", "Relu", "--shape", "1x1x1x1", "--repeat", "100000000000"],
            ["profile", "--op", "Relu", "--shape", "1x1x1x1", "--repeat", "100000000000"],
            ["bench", "--op", "Relu", "--shape", "1x1x1x1", "--repeat", "9223372036854775807"],
            ["bench", "--op", "Relu", "--shape", "1x1x1x1", "--warmup", "9223372036854775807"],
            ["profile", "--op", "Relu", "--shape", "1x1x1x1", "--warmup", "100001"],
            ["bench", "--op", "Relu", "--repeat", "99999999999999999999999"],
        ]
        for words in cases {
            let runner = CommandRunner()
            #expect(runner.run(words) == 2, "\(words): \(runner.error)")
            #expect(runner.error.contains("expected"), "\(words): \(runner.error)")
            #expect(runner.error.split(separator: "\n").count == 1, "\(words): \(runner.error)")
        }
    }

    @Test func theCapsAreInclusiveAndWideFiniteRangesAreKept() throws {
        // Controls at the limits: 100000 is the documented cap; -1.7e38...1.7e38 is 3.4e38 wide, a finite Float.
        #expect(try ValueParsing.count("100000", option: "--repeat", minimum: 1) == 100_000)
        #expect(try ValueParsing.count("0", option: "--warmup", minimum: 0) == 0)
        #expect(throws: UsageError.self) { try ValueParsing.count("100001", option: "--repeat", minimum: 1) }
        #expect(try ValueParsing.range("-1.7e38,1.7e38") == -1.7e38...1.7e38)
        #expect(throws: UsageError.self) { try ValueParsing.range("-3.4e38,3.4e38") }
        #expect(throws: LayerKitError.self) { try Tensor.uniform(shape: [4], in: -3.4e38...3.4e38, seed: 1) }
        let wide = try Tensor.uniform(shape: [64], in: -1.7e38...1.7e38, seed: 1)
        #expect(wide.elements.map { $0 }.allSatisfy { $0.isFinite && abs($0) <= 1.7e38 })
        let runner = CommandRunner()
        #expect(runner.run(["parity", "--op", "Relu", "--shape", "1x3x2x2", "--range=-1.7e38,1.7e38"]) != 2,
                "\(runner.error)")
    }

    // MARK: 12 and 13, what a file is

    @Test func nonRegularFilesAreRefusedByWhatTheyAreWithoutHanging() throws {
        let fifo = "\(directory)/pipe.png"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(mkfifo("\(directory)/pipe.npy", 0o600) == 0)
        #expect(mkfifo("\(directory)/pipe.onnx", 0o600) == 0)
        try FileManager.default.createSymbolicLink(atPath: "\(directory)/null.npy", withDestinationPath: "/dev/null")
        try FileManager.default.createSymbolicLink(atPath: "\(directory)/zero.npy", withDestinationPath: "/dev/zero")
        let input = "\(directory)/x.npy"
        try writeNPY([1, -2], shape: [1, 2], to: input)
        let cases: [([String], String)] = [
            (["apply", "--op", "Relu", "--input", fifo, "--output", "\(directory)/y.npy"], "not a regular file (a FIFO)"),
            (["apply", "--op", "Relu", "--input", "\(directory)/pipe.npy", "--output", "\(directory)/y.npy"],
             "not a regular file (a FIFO)"),
            (["inspect", "\(directory)/pipe.onnx"], "not a regular file (a FIFO)"),
            (["apply", "--op", "Relu", "--input", "\(directory)/null.npy", "--output", "\(directory)/y.npy"],
             "not a regular file (a character device)"),
            (["apply", "--op", "Relu", "--input", "\(directory)/zero.npy", "--output", "\(directory)/y.npy"],
             "not a regular file (a character device)"),
            (["apply", "--op", "Relu", "--input", input, "--output", "\(directory)/null.npy"],
             "not a regular file (a character device)"),
            (["apply", "--op", "Relu", "--input", input, "--output", "\(directory)/pipe.npy"], "not a regular file (a FIFO)"),
        ]
        for (words, message) in cases {
            let runner = CommandRunner()
            #expect(runner.run(words) == 1, "\(words): \(runner.error)")
            #expect(runner.error.contains(message), "\(words): \(runner.error)")
            #expect(!runner.error.lowercased().contains("permission"), "\(words): \(runner.error)")
        }
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/y.npy"))
        // Control: a symbolic link to a regular file is read, and written through (the link stays a link).
        try FileManager.default.createSymbolicLink(atPath: "\(directory)/link.npy", withDestinationPath: input)
        try FileManager.default.createSymbolicLink(atPath: "\(directory)/out.npy", withDestinationPath: "\(directory)/y2.npy")
        try writeNPY([7], shape: [1], to: "\(directory)/y2.npy")
        let control = CommandRunner()
        #expect(control.run(["apply", "--op", "Relu", "--input", "\(directory)/link.npy", "--output", "\(directory)/out.npy",
                             "--backend", "cpu"]) == 0, "\(control.error)")
        #expect(try npyValues("\(directory)/y2.npy") == [1, 0] as [Float])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/out.npy") == "\(directory)/y2.npy")
    }

    @Test func theMemoryMessageSaysHowMuch() {
        // 10^12 elements of 4 bytes: 4 * 10^12 / 2^20 = 3814697.27 MiB, rounded up.
        #expect(throws: LayerKitError.self) { try Tensor(shape: [1, 1, 1_000_000, 1_000_000]) }
        do {
            _ = try Tensor(shape: [1, 1, 1_000_000, 1_000_000])
        } catch {
            #expect("\(error)".contains("needs 3814698 MiB"), "\(error)")
        }
    }

    @Test func aHugeErrorIsElidedInTheMiddle() {
        // The 30,000-stage chain: its error quoted 150 KB on one line.
        let formula = String(repeating: "x+", count: 30_000) + "q"
        let runner = CommandRunner()
        #expect(runner.run(["apply", "--expr", formula, "--input", "\(directory)/x.npy",
                            "--output", "\(directory)/y.npy"]) != 0)
        let lines = runner.error.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].count < 1200, "\(runner.error.count) characters")
        // Printable.elided by itself: head and tail kept, the count of what was cut said.
        let text = String(repeating: "a", count: 600) + String(repeating: "m", count: 5000) + String(repeating: "z", count: 600)
        let cut = Printable.elided(text, limit: 1000)
        #expect(cut.hasPrefix(String(repeating: "a", count: 500)) && cut.hasSuffix(String(repeating: "z", count: 500)))
        #expect(cut.contains("[5200 characters elided]"))
        #expect(Printable.elided("short", limit: 1000) == "short")
    }

    // MARK: 14, escaping

    @Test func inspectEscapesControlCharactersFromTheModel() throws {
        let path = "\(directory)/names.onnx"
        try HostileModel.relu(input: "in\u{1B}[31mred", output: "out\u{0}nul", node: "node\u{1B}]0;title\u{7}-naïve-é",
                              producer: "maker\r\nfake line", also: "naïve-é").write(to: URL(fileURLWithPath: path))
        let runner = CommandRunner()
        #expect(runner.run(["inspect", path, "--backend", "cpu"]) == 0, "\(runner.error)")
        let out = runner.out
        for raw in ["\u{1B}", "\u{0}", "\u{7}", "\r"] { #expect(!out.contains(raw), "raw \(raw.unicodeScalars.first!.value)") }
        for shown in ["in\\x1B[31mred", "out\\x00nul", "node\\x1B]0;title\\x07", "maker\\x0D\\x0Afake line"] {
            #expect(out.contains(shown), "\(shown) in \(out)")
        }
        // Control: printable non-ASCII text is kept as it is.
        #expect(out.contains("naïve-é"))
        #expect(Printable.escaped("plain é ü 名") == "plain é ü 名")
        #expect(Printable.escaped("\u{85}\u{7F}") == "\\u{85}\\x7F")
    }
}

/// A one-node ONNX model written byte by byte from onnx.proto's field
/// numbers, for names no exporter would write.
enum HostileModel {
    private static func varint(_ value: Int) -> [UInt8] {
        var v = UInt64(value), out: [UInt8] = []
        while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        return out + [UInt8(v)]
    }
    private static func field(_ number: Int, _ bytes: [UInt8]) -> [UInt8] { varint(number << 3 | 2) + varint(bytes.count) + bytes }
    private static func field(_ number: Int, _ text: String) -> [UInt8] { field(number, Array(text.utf8)) }

    /// ValueInfoProto: a float tensor of shape 1x3.
    private static func value(_ name: String) -> [UInt8] {
        let dims = [1, 3].flatMap { field(1, [0x08] + varint($0)) }  // Dimension.dim_value = 1
        let tensorType = [0x08, 0x01] + field(2, dims)                 // elem_type FLOAT, shape
        return field(1, name) + field(2, field(1, tensorType))
    }

    /// Relu from `input` to `output` in node `node`; `also` names the graph.
    static func relu(input: String, output: String, node: String, producer: String, also: String) -> Data {
        let nodeBytes = field(1, input) + field(2, output) + field(3, node) + field(4, "Relu")
        let graph = field(1, nodeBytes) + field(2, also) + field(11, value(input)) + field(12, value(output))
        let opset = field(1, "") + [0x10] + varint(17)
        return Data([0x08, 0x08] + field(2, producer) + field(7, graph) + field(8, opset))
    }
}
