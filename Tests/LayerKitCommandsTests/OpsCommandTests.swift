import Foundation
import Testing
import LayerKit
@testable import LayerKitCommands

struct OpsCommandTests {
    @Test func opsListsEveryCatalogOpWithItsFormula() throws {
        let runner = CommandRunner()
        #expect(runner.run(["ops"]) == 0)
        for definition in OpDefinition.catalog {
            #expect(runner.out.contains(definition.name), "missing \(definition.name)")
        }
        #expect(runner.out.contains("x * sigmoid(beta * x)"))
        #expect(runner.out.contains("approximate=none|tanh"))
    }

    /// Docs/OPS.md's op table is `layerkit ops --markdown`, verbatim.
    @Test func theDocsCatalogIsGeneratedByOps() throws {
        let runner = CommandRunner()
        #expect(runner.run(["ops", "--markdown"]) == 0)
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("Docs/OPS.md"), encoding: .utf8)
        // Other tests register layers of their own in the shared registry; Docs/OPS.md lists the built-ins.
        let added = Set(LayerRegistry.shared.all.map(\.name)).subtracting(OpDefinition.catalog.map(\.name))
        let builtins = runner.out.split(separator: "\n").filter { line in
            let first = line.split(separator: "|").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            return !added.contains(first)
        }.joined(separator: "\n")
        #expect(readme.contains(builtins), "Docs/OPS.md's catalog differs from `layerkit ops --markdown` (run Scripts/update-ops-table)")
    }

    /// `ops --onnx` lists every standard ONNX op with the element types
    /// LayerKit computes it in, within 100 columns; Docs/OPS.md's ONNX table
    /// is its `--markdown`, verbatim.
    @Test func opsONNXListsEachOpsTypesAndTheDocsShowThem() throws {
        let runner = CommandRunner()
        #expect(runner.run(["ops", "--onnx"]) == 0, "\(runner.error)")
        let ops = ONNXOpSummary.all
        #expect(ops.contains { $0.name == "Relu" && $0.types == "float types in float32 by its layer (CPU and GPU)" })
        for op in ops { #expect(runner.out.contains("\n\(op.name) "), "no row for \(op.name)") }
        #expect(runner.out.split(separator: "\n").allSatisfy { $0.count <= OpsCommand.maximumWidth })
        let markdown = CommandRunner()
        #expect(markdown.run(["ops", "--onnx", "--markdown"]) == 0)
        #expect(markdown.out.contains("| Reshape | 1 to 25 | float types in float32 by its layer (CPU and GPU); every type moved exactly |"))
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let docs = try String(contentsOf: root.appendingPathComponent("Docs/OPS.md"), encoding: .utf8)
        #expect(docs.contains(markdown.out), "Docs/OPS.md's ONNX ops differ from `layerkit ops --onnx --markdown` (run Scripts/update-ops-table)")
        #expect(CommandRunner().run(["ops", "Relu", "--onnx"]) == 2)
    }

    @Test(.enabled(if: gpuTestsEnabled))
    func parityAllPassesAndPrintsOneRowPerCase() throws {
        let runner = CommandRunner()
        #expect(runner.run(["parity", "--all", "--shape", "1x5x9x7"]) == 0, "\(runner.out)\(runner.error)")
        for definition in OpDefinition.catalog {
            #expect(runner.out.contains("\n\(definition.name) "), "no row for \(definition.name)")
        }
        #expect(runner.out.contains("PASS: all"))
        #expect(runner.run(["parity", "--all", "--op", "Elu"]) == 2)
    }

    @Test(arguments: OpDefinition.catalog.map(\.name))
    func applyRunsEveryOp(name: String) throws {
        let directory = try CommandRunner.scratchDirectory()
        try Tensor.uniform(shape: [1, 3, 4, 5], in: 0.5...4, seed: 2).writeNPY(to: "\(directory)/x.npy")
        try writeNPY([0.5, 1, 2], shape: [3], to: "\(directory)/w.npy")
        let definition = try #require(OpDefinition.catalog.first { $0.name == name })
        let weights = definition.values.filter { $0.defaultValue == nil }.flatMap { ["--weights", "\($0.name)=\(directory)/w.npy"] }
        let runner = CommandRunner()
        #expect(runner.run(["apply", "--op", name.lowercased(), "--input", "\(directory)/x.npy",
                            "--output", "\(directory)/y.npy", "--backend", "cpu"] + weights) == 0, "\(runner.error)")
        #expect(try Tensor(npyFile: "\(directory)/y.npy").shape == [1, 3, 4, 5])
    }

    @Test func weightsMustMatchTheChannels() throws {
        let directory = try CommandRunner.scratchDirectory()
        try Tensor(shape: [1, 3, 2, 2]).writeNPY(to: "\(directory)/x.npy")
        try writeNPY([0.5, 1], shape: [2], to: "\(directory)/slope.npy")
        let runner = CommandRunner()
        #expect(runner.run(["apply", "--op", "PRelu", "--weights", "slope=\(directory)/slope.npy",
                            "--input", "\(directory)/x.npy", "--output", "\(directory)/y.npy"]) == 1)
        #expect(runner.error.contains("2 'slope' weights for 3 channels"), "\(runner.error)")
        #expect(runner.run(["apply", "--op", "PRelu", "--input", "\(directory)/x.npy",
                            "--output", "\(directory)/y.npy"]) == 1)
        #expect(runner.error.contains("needs per-channel weights 'slope'"), "\(runner.error)")
    }

    @Test func wordParametersReachTheirChoice() throws {
        let directory = try CommandRunner.scratchDirectory()
        try Tensor(shape: [1, 1, 1, 2], values: [-1, 1]).writeNPY(to: "\(directory)/x.npy")
        let runner = CommandRunner()
        #expect(runner.run(["apply", "--op", "gelu", "--param", "approximate=tanh", "--input", "\(directory)/x.npy",
                            "--output", "\(directory)/y.npy", "--backend", "cpu"]) == 0, "\(runner.error)")
        #expect(runner.run(["apply", "--op", "gelu", "--param", "approximate=fast", "--input", "\(directory)/x.npy",
                            "--output", "\(directory)/y.npy"]) == 2)
        #expect(runner.error.contains("none, tanh"))
    }
}

@Suite(.enabled(if: gpuTestsEnabled))
struct ParityOverflowTests {
    /// Exp beyond fp16's range: the GPU stores inf, and parity says so.
    @Test func resultsPastFP16AreReportedNotHidden() throws {
        let runner = CommandRunner()
        #expect(runner.run(["parity", "--op", "exp", "--range", "11.2,12", "--shape", "1x2x4x4"]) == 1)
        let line = try #require(runner.out.split(separator: "\n").first { $0.hasPrefix("non-finite mismatches:") })
        #expect(Int(line.split(separator: " ").last ?? "") == 32, "\(line)")
    }
}
