import Foundation
import Testing
import LayerKit
@testable import LayerKitCommands

/// `--json` of run, inspect, ops, devices, profile and `bench model.onnx`;
/// batches of `run --input DIR/`; `--threads`; the progress bar.
struct JSONBatchAndThreadsCommandTests {
    let directory: String
    init() throws { directory = try CommandRunner.scratchDirectory() }

    static let model = ModelCommandTests.fixture("small_cnn.onnx")
    static let input = ModelCommandTests.fixture("small_cnn.input.npy")

    /// Runs `arguments`, expects exit 0, and parses standard output as one JSON object.
    static func json(_ arguments: [String]) throws -> [String: Any] {
        let runner = CommandRunner()
        let status = runner.run(arguments)
        #expect(status == 0, "\(arguments): \(runner.error)")
        #expect(!runner.error.contains("\r"), "a progress bar without a terminal")
        return try #require(try JSONSerialization.jsonObject(with: Data(runner.out.utf8)) as? [String: Any])
    }

    @Test func benchModelJSON() throws {
        let record = try Self.json(["bench", Self.model, "--backend", "cpu", "--repeat", "4", "--warmup", "1",
                                    "--threads", "1", "--json"])
        #expect(record["schema"] as? String == "layerkit-bench-model/1")
        #expect(record["repeat"] as? Int == 4 && record["warmup"] as? Int == 1)
        #expect((record["cpu"] as? [String: Any])?["threads"] as? Int == 1)
        let inputs = try #require(record["inputs"] as? [[String: Any]])
        #expect(inputs.first?["name"] as? String == "x" && inputs.first?["shape"] as? [Int] == [1, 3, 32, 32])
        #expect(inputs.first?["file"] == nil, "seeded")
        let results = try #require(record["results"] as? [[String: Any]])
        #expect(results.count == 1)
        let r = try #require(results.first)
        #expect(r["backend"] as? String == "cpu" && r["placement"] as? String == "cpu" && r["runs"] as? Int == 4)
        let (low, median, p90) = (r["minMs"] as? Double ?? -1, r["medianMs"] as? Double ?? -1, r["p90Ms"] as? Double ?? -1)
        #expect(0 < low && low <= median && median <= p90)
        let mean = try #require(r["meanMs"] as? Double)
        #expect(abs((r["inferencesPerSecond"] as? Double ?? 0) - 1000 / mean) < 1e-6 * 1000 / mean)
    }

    @Test func benchModelTable() {
        let runner = CommandRunner()
        #expect(runner.run(["bench", Self.model, "--input", Self.input, "--backend", "cpu", "--repeat", "3"]) == 0,
                "\(runner.error)")
        for text in ["x 1x3x32x32 from", "3 runs after 3 warm-up", "median ms", "p90 ms", "inferences/s", "cpu"] {
            #expect(runner.out.contains(text), "missing \(text)")
        }
        #expect(runner.run(["bench", Self.model, "--op", "Swish"]) == 2)
        #expect(runner.error.contains("not --op"))
    }

    @Test func runJSON() throws {
        let record = try Self.json(["run", Self.model, "--input", Self.input, "--backend", "cpu", "--top", "3", "--json"])
        #expect(record["schema"] as? String == "layerkit-run/1")
        let runs = try #require(record["runs"] as? [[String: Any]])
        #expect(runs.count == 1 && (runs[0]["ms"] as? Double ?? 0) > 0)
        let output = try #require((runs[0]["outputs"] as? [[String: Any]])?.first)
        #expect(output["name"] as? String == "probabilities" && output["shape"] as? [Int] == [1, 16])
        let top = try #require((output["top"] as? [[[String: Any]]])?.first)
        #expect(top.count == 3)
        // The same classes onnxruntime ranks first.
        let expected = try Tensor(npyFile: ModelCommandTests.fixture("small_cnn.expected.npy")).values
        let best = expected.indices.max { expected[$0] < expected[$1] }
        #expect(top[0]["index"] as? Int == best)
        let values = top.compactMap { $0["value"] as? Double }
        #expect(values == values.sorted(by: >))
    }

    @Test func inspectOpsDevicesAndProfileJSON() throws {
        let inspect = try Self.json(["inspect", Self.model, "--backend", "cpu", "--json"])
        #expect(inspect["schema"] as? String == "layerkit-inspect/1")
        let inputs = try #require(inspect["inputs"] as? [[String: Any]])
        #expect(inputs.first?["name"] as? String == "x" && inputs.first?["dimensions"] as? [String] == ["1", "3", "32", "32"])
        let nodes = try #require(inspect["nodes"] as? [[String: Any]])
        // 29 nodes, 22 steps once Conv and Gemm take in their epilogues.
        #expect(nodes.count >= 22 && nodes.first?["opType"] as? String == "Conv+BatchNormalization+Relu")
        #expect(nodes.first?["placement"] as? String == "cpu")

        let ops = try Self.json(["ops", "--json"])
        #expect(ops["schema"] as? String == "layerkit-ops/1")
        let swish = try #require((ops["ops"] as? [[String: Any]])?.first { $0["name"] as? String == "Swish" })
        #expect(swish["parameters"] as? [String] == ["beta=1"] && swish["gpu"] as? Bool == true)

        let devices = try Self.json(["devices", "--json"])
        #expect(devices["schema"] as? String == "layerkit-devices/1")
        #expect((devices["cpu"] as? [String: Any])?["threads"] as? Int == ProcessInfo.processInfo.activeProcessorCount)
        #expect(devices["devices"] is [[String: Any]])

        let profile = try Self.json(["profile", Self.model, "--backend", "cpu", "--repeat", "2", "--warmup", "0",
                                     "--threads", "2", "--json"])
        #expect(profile["schema"] as? String == "layerkit-profile/1")
        #expect(profile["repeat"] as? Int == 2 && (profile["cpu"] as? [String: Any])?["threads"] as? Int == 2)
        let layers = try #require(profile["layers"] as? [[String: Any]])
        #expect(layers.count >= 20 && layers.allSatisfy { $0["backend"] as? String == "cpu" })
        #expect((profile["wallMs"] as? Double ?? 0) >= layers.compactMap { $0["ms"] as? Double }.reduce(0, +) * 0.5)
    }

    /// Three items: batch item 0, 1 and 0 again of small_cnn_batch2's input.
    func makeImages() throws -> String {
        let folder = directory + "/in"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let pair = try TypedTensor(npyFile: ModelCommandTests.fixture("small_cnn_batch2.input.npy"))
        for i in 0..<3 {
            let item = try RunBatch.item(i % 2, of: pair, items: 2, name: "x")
            try item.writeNPY(to: "\(folder)/img\(i).npy")
        }
        return folder
    }

    @Test func runAFolderWritesOneOutputPerInput() throws {
        let folder = try makeImages()
        let runner = CommandRunner()
        #expect(runner.run(["run", Self.model, "--input", folder + "/", "--output", directory + "/out",
                            "--backend", "cpu"]) == 0, "\(runner.error)")
        #expect(!runner.error.contains("\r"))
        let written = try FileManager.default.contentsOfDirectory(atPath: directory + "/out").sorted()
        #expect(written == ["img0.npy", "img1.npy", "img2.npy"])
        let expected = try Tensor(npyFile: ModelCommandTests.fixture("small_cnn_batch2.expected.npy")).values
        for (i, name) in written.enumerated() {
            let values = try Tensor(npyFile: "\(directory)/out/\(name)").values
            let row = Array(expected[(i % 2) * 16..<(i % 2 + 1) * 16])
            #expect(zip(values, row).allSatisfy { abs($0 - $1) <= 1e-4 }, "\(name)")
        }
    }

    @Test func batchStacksItemsIntoOneRun() throws {
        let folder = try makeImages()
        try FileManager.default.removeItem(atPath: folder + "/img2.npy")
        let one = ModelCommandTests.fixture("small_cnn_batch2.onnx")
        let record = try Self.json(["run", one, "--input", folder, "--batch", "2", "--output", directory + "/out",
                                    "--backend", "cpu", "--json"])
        let runs = try #require(record["runs"] as? [[String: Any]])
        #expect(runs.count == 1)
        let input = try #require((runs[0]["inputs"] as? [[String: Any]])?.first)
        #expect(input["shape"] as? [Int] == [2, 3, 32, 32] && (input["files"] as? [String])?.count == 2)
        let output = try #require((runs[0]["outputs"] as? [[String: Any]])?.first)
        #expect(output["shape"] as? [Int] == [2, 16] && (output["top"] as? [Any])?.count == 2)
        #expect(try Tensor(npyFile: directory + "/out/img1.npy").shape == [1, 16])
    }

    @Test func batchMistakesAreClearErrors() throws {
        let folder = try makeImages()
        let empty = directory + "/empty"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let batch2 = ModelCommandTests.fixture("small_cnn_batch2.onnx")
        let cases: [([String], Int32, String)] = [
            (["run", Self.model, "--input", empty], 1, "no .npy, .pb, .png or .jpg files"),
            (["run", Self.model, "--input", folder, "--output", folder], 2, "is the folder of the inputs"),
            (["run", batch2, "--input", folder, "--batch", "2"], 2, "3 files do not fill batches of 2"),
            (["run", Self.model, "--input", folder, "--batch", "2"], 2, "fixed batch of 1"),
            (["run", Self.model, "--input", Self.input, "--batch", "2"], 2, "give --input DIR/"),
        ]
        for (arguments, status, message) in cases {
            let runner = CommandRunner()
            #expect(runner.run(arguments + ["--backend", "cpu"]) == status, "\(arguments): \(runner.error)")
            #expect(runner.error.contains(message), "\(arguments): \(runner.error)")
        }
        // Mixed shapes in one batch.
        try Tensor(shape: [1, 3, 16, 16]).writeNPY(to: folder + "/img3.npy")
        let runner = CommandRunner()
        #expect(runner.run(["run", ModelCommandTests.fixture("small_cnn_batch2.onnx"), "--input", folder + "/img0.npy",
                            "--input", folder + "/img3.npy", "--batch", "2", "--backend", "cpu"]) == 1)
        #expect(runner.error.contains("a batch needs one shape"), "\(runner.error)")
        #expect(!FileManager.default.fileExists(atPath: folder + "/img0.npy.npy"))
    }

    @Test func threadsOneAndTwoGiveBitwiseEqualOutputs() throws {
        var outputs: [String: [UInt32]] = [:]
        for threads in ["1", "2"] {
            let file = "\(directory)/y\(threads).npy"
            let runner = CommandRunner()
            #expect(runner.run(["run", Self.model, "--input", Self.input, "--output", file, "--backend", "cpu",
                                "--threads", threads]) == 0, "\(runner.error)")
            outputs[threads] = try Tensor(npyFile: file).values.map(\.bitPattern)
        }
        #expect(outputs["1"] == outputs["2"])
        let runner = CommandRunner()
        #expect(runner.run(["run", Self.model, "--input", Self.input, "--threads", "0"]) == 2)
        #expect(runner.error.contains("--threads"))
    }

    @Test func progressBarRendersAndStaysSilentWithoutATerminal() {
        #expect(ProgressBar.render(label: "bench", done: 3, total: 10, elapsed: 1.26, width: 10)
                == "bench [===>      ] 3/10 30% 1.3s")
        #expect(ProgressBar.render(label: "x", done: 10, total: 10, elapsed: 0, width: 4) == "x [====] 10/10 100% 0.0s")
        #expect(ProgressBar.render(label: "a\u{1B}b", done: 0, total: 0, elapsed: 0, width: 2) == "a\\x1Bb [==] 0/0 100% 0.0s")
        let runner = CommandRunner()
        let silent = Console(out: { _ in }, error: { text in runner.recordError(text) })
        _ = ProgressBar.forEach("work", total: 5, console: silent) { $0 }
        #expect(runner.error.isEmpty)
        let terminal = Console(out: { _ in }, error: { text in runner.recordError(text) }, errorIsTerminal: true)
        _ = ProgressBar.forEach("work", total: 5, console: terminal) { $0 }
        #expect(runner.error.hasPrefix("\rwork [") && runner.error.hasSuffix("\r\u{1B}[K"))
    }
}
