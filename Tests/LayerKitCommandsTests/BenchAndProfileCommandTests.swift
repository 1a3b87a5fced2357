import Foundation
import FoundationXML
import Testing
import LayerKit
@testable import LayerKitCommands

/// `layerkit bench` and `layerkit profile`: the documented JSON fields, the
/// trace, the plot, and refusals of nonsense.
@Suite(.enabled(if: gpuTestsEnabled))
struct BenchAndProfileCommandTests {
    let directory: String
    init() throws { directory = try CommandRunner.scratchDirectory() }

    @Test func benchJSONHasTheDocumentedFields() throws {
        let runner = CommandRunner()
        let status = runner.run(["bench", "--op", "Swish", "--param", "beta=2", "--shape", "1x6x16x16",
                                 "--repeat", "3", "--warmup", "1", "--json"])
        #expect(status == 0, "\(runner.error)")
        let record = try #require(try JSONSerialization.jsonObject(with: Data(runner.out.utf8)) as? [String: Any])
        for key in ["schema", "op", "parameters", "shape", "elements", "repeat", "warmup", "cpu", "device",
                    "results", "timestampOverheadPercent"] {
            #expect(record[key] != nil, "missing \(key)")
        }
        #expect(record["schema"] as? String == "layerkit-bench/1")
        #expect(record["shape"] as? [Int] == [1, 6, 16, 16])
        #expect(record["elements"] as? Int == 1536)
        let cpu = try #require(record["cpu"] as? [String: Any])
        #expect(cpu["instructionSet"] is String && cpu["threads"] is Int)
        let device = try #require(record["device"] as? [String: Any])
        #expect(device["name"] is String && device["kind"] is String && device["emulated"] is Bool)
        let results = try #require(record["results"] as? [[String: Any]])
        let measures = results.map { "\($0["backend"] ?? "") \($0["measure"] ?? "")" }
        #expect(measures == ["cpu kernel", "cpu endToEnd", "gpu kernel", "gpu endToEnd", "gpu endToEndTimestampsOff",
                             "gpu uploadCopy", "gpu downloadCopy"])
        for result in results {
            for key in ["runs", "medianMs", "minMs", "p90Ms", "elements", "bytes", "elementsPerSecond", "gigabytesPerSecond"] {
                #expect(result[key] != nil, "missing \(key)")
            }
            #expect(result["runs"] as? Int == 3)
            let median = try #require(result["medianMs"] as? Double)
            let minimum = try #require(result["minMs"] as? Double)
            let p90 = try #require(result["p90Ms"] as? Double)
            #expect(minimum > 0 && minimum <= median && median <= p90)
        }
    }

    /// Shape -> Cast folds to a constant at load: `bench` must not present
    /// copying it out as the model's speed, and `inspect` says it runs nothing.
    @Test func aModelThatFoldsAwayIsNamedSo() throws {
        let directory = try CommandRunner.scratchDirectory()
        let model = "\(directory)/shape.onnx"
        try TinyONNX.chain([TinyONNX.Node(opType: "Shape"), TinyONNX.Node(opType: "Cast", intAttributes: ["to": 1])],
                           shape: [4]).write(to: URL(fileURLWithPath: model))
        let bench = CommandRunner()
        #expect(bench.run(["bench", model, "--backend", "cpu", "--repeat", "2", "--warmup", "0"]) == 0, "\(bench.error)")
        #expect(bench.out.contains("cpu      none"), "\(bench.out)")
        #expect(bench.out.contains("note: every output was computed at load"), "\(bench.out)")
        let inspect = CommandRunner()
        #expect(inspect.run(["inspect", model]) == 0, "\(inspect.error)")
        #expect(inspect.out.contains("runs: every output is computed at load"), "\(inspect.out)")
        // A model with a layer is not flagged.
        let relu = "\(directory)/relu.onnx"
        try TinyONNX.chain([TinyONNX.Node(opType: "Relu")], shape: [4]).write(to: URL(fileURLWithPath: relu))
        let plain = CommandRunner()
        #expect(plain.run(["bench", relu, "--backend", "cpu", "--repeat", "2", "--warmup", "0"]) == 0, "\(plain.error)")
        #expect(!plain.out.contains("note: every output") && plain.out.contains("cpu      cpu"), "\(plain.out)")
    }

    @Test func benchTableNamesTheDevice() {
        let runner = CommandRunner()
        #expect(runner.run(["bench", "--op", "Relu", "--shape", "1x4x8x8", "--repeat", "2", "--backend", "gpu"]) == 0,
                "\(runner.error)")
        #expect(runner.out.contains("gpu kernel") && runner.out.contains("timestamps on vs off"))
        if let context = try? GPUContext(), context.deviceInfo.kind == .cpu { #expect(runner.out.contains("EMULATED")) }
    }

    @Test(arguments: [
        (["--repeat", "0"], "--repeat"), (["--shape", "1x0x8x8"], "--shape"), (["--shape", "1x64"], nil),
        (["--backend", "tpu"], "--backend"), (["--warmup", "-1"], "--warmup"), (["--plot", "x.svg"], "--sweep"),
        (["--sweep", "--shape", "1x1x2x2"], "--shape"), (["model.onnx"], "--op"),
    ] as [([String], String?)])
    func benchRefusesNonsense(words: [String], mentions: String?) {
        let runner = CommandRunner()
        let status = runner.run(["bench", "--op", "Swish", "--repeat", "1"] + words)
        guard let mentions else {
            #expect(status == 0, "\(runner.error)")  // a rank-2 shape is fine
            return
        }
        #expect(status == 2)
        #expect(runner.error.contains(mentions), "\(runner.error)")
        #expect(runner.out.isEmpty)
    }

    @Test func profileWritesATableAndATrace() throws {
        let trace = "\(directory)/trace.json"
        let runner = CommandRunner()
        let status = runner.run(["profile", "--op", "Swish", "--shape", "2x6x16x16", "--warmup", "1", "--trace", trace])
        #expect(status == 0, "\(runner.error)")
        for text in ["layer", "Swish", "GPU", "wall - layers", "fence wait", "upload", "download", "wall time", "8x8x1"] {
            #expect(runner.out.contains(text), "missing \(text)")
        }
        let root = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: trace)))
            as? [String: Any])
        let events = try #require(root["traceEvents"] as? [[String: Any]])
        let tracks = events.filter { $0["name"] as? String == "thread_name" }
            .compactMap { ($0["args"] as? [String: Any])?["name"] as? String }
        #expect(Set(tracks) == ["GPU kernels", "CPU work", "transfers"])
        let used = Set(events.filter { $0["ph"] as? String == "X" }.compactMap { $0["tid"] as? Int })
        #expect(used == [1, 2, 3])
    }

    @Test func profileOnTheCPU() {
        let runner = CommandRunner()
        #expect(runner.run(["profile", "--op", "Swish", "--shape", "1x3x8x8", "--backend", "cpu"]) == 0, "\(runner.error)")
        #expect(runner.out.contains("CPU evaluator") && runner.out.contains("CPU"))
    }

    @Test func profileAModelWithATrace() throws {
        let directory = try CommandRunner.scratchDirectory()
        let model = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("LayerKitTests/Fixtures/models/article_beta1.onnx").path
        let runner = CommandRunner()
        #expect(runner.run(["profile", model, "--trace", "\(directory)/t.json", "--repeat", "3"]) == 0, "\(runner.error)")
        for row in ["conv (Conv)", "swish (layerkit.Swish)", "softmax (Softmax)", "wall time"] {
            #expect(runner.out.contains(row), "no row \(row)")
        }
        let trace = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(directory)/t.json")))
        let events = try #require((trace as? [String: Any])?["traceEvents"] as? [[String: Any]])
        let ops = Set(events.compactMap { ($0["args"] as? [String: Any])?["op"] as? String })
        #expect(ops.isSuperset(of: ["conv (Conv)", "fc (Gemm)"]))
    }

    @Test(arguments: [["model.onnx", "--op", "Swish"], ["a.onnx", "b.onnx"], ["--op", "Swish", "--trace", "t.txt"], ["--op", "Swish", "--backend", "both"],
                      ["--op", "Swish", "--repeat", "0"], []])
    func profileRefusesNonsense(words: [String]) {
        let runner = CommandRunner()
        #expect(runner.run(["profile"] + words) == 2, "\(runner.error)")
        #expect(!runner.error.isEmpty)
    }

    @Test func sweepPlotIsWellFormedSVG() throws {
        let record = BenchSweep.Record(
            op: "Swish", channels: 64, cpu: .init(instructionSet: "avx2", threads: 2), device: nil,
            points: [.init(size: 8, elements: 4096, runs: 5, copyMs: 0.01, cpuKernelMs: 0.02, gpuKernelMs: 0.2, gpuEndToEndMs: 0.5),
                     .init(size: 16, elements: 16384, runs: 5, copyMs: 0.02, cpuKernelMs: 0.05, gpuKernelMs: nil, gpuEndToEndMs: 0.9)],
            dispatchOverhead: .init(cpuEndToEndMs: 0.01, gpuKernelMs: 0.03, gpuEndToEndMs: 0.2), copyThreads: 2)
        let svg = SweepPlot.svg(record, context: nil)
        let parser = XMLParser(data: Data(svg.utf8))
        #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
        for text in ["memory copy (ceiling", "CPU evaluator", "GPU kernel", "GPU end to end", "dispatch overhead", "8²"] {
            #expect(svg.contains(text), "missing \(text)")
        }
    }
}

/// A refused allocation is an error and exit 1, never a signal (issue 14,
/// class 5: `apply` of a 1 GB `.npy` under `ulimit -v` 2.8 GB died of SIGILL).
struct OutOfMemoryCommandTests {
    /// Sanitizers reserve terabytes of address space, which `ulimit -v` forbids.
    static let isSanitized = dlsym(nil, "__asan_init") != nil || dlsym(nil, "__tsan_init") != nil

    @Test(.enabled(if: !isSanitized))
    func aRefusedTensorIsAnErrorUnderUlimit() throws {
        let limit = 1 << 20  // KiB: 1 GiB of address space
        // Control: a small tensor runs under the same limit.
        let small = try CommandRunner.runExecutable(["bench", "--op", "Relu", "--shape", "1x4x4x4", "--backend", "cpu",
                                                     "--repeat", "1"], environment: [:], virtualMemoryKiB: limit)
        #expect(small.status == 0, "\(small.error)")
        // 1x256x1024x1024 Float32 is 1 GiB: more than the limit leaves.
        let big = try CommandRunner.runExecutable(["bench", "--op", "Relu", "--shape", "1x256x1024x1024", "--backend", "cpu",
                                                   "--repeat", "1"], environment: [:], virtualMemoryKiB: limit)
        #expect(big.status == 1, "exit \(big.status): \(big.error)")
        #expect(big.error.contains("cannot allocate 1024 MiB for a tensor of shape 1x256x1024x1024: the system refused the memory"),
                "\(big.error)")
    }
}

/// A run in pieces records start, upload, kernel and download marks per
/// piece: bench's phases are their sums, not the first piece's.
@Suite struct BenchPhaseTests {
    @Test func phasesSumOverThePieces() throws {
        let marks: [(label: String, ms: Double)] = [("start", 0), ("upload", 1), ("kernel", 3), ("download", 4),
                                                    ("start", 10), ("upload", 12), ("kernel", 15), ("download", 19)]
        let phases = try #require(BenchWorkloads.phases(of: marks))
        #expect(phases.upload == 3 && phases.kernel == 5 && phases.download == 5)
        #expect(BenchWorkloads.phases(of: [("start", 0), ("upload", 1)]) == nil)
    }
}
