import Foundation
import LayerKit

/// `layerkit bench model.onnx`: whole-model inference times, as
/// onnxruntime's `onnxruntime_perf_test` and ncnn's `benchncnn` give them:
/// min, median, p90 and mean of `--repeat` runs of `Model.predict` after
/// `--warmup` untimed ones, and throughput (inferences a second over the
/// timed runs), per backend; inputs from `--input` files or seeded.
enum BenchModel {
    /// What `bench model.onnx --json` prints (fields in Docs/JSON.md).
    struct Record: Encodable {
        let schema = "layerkit-bench-model/1"
        let model: String
        let inputs: [Input]
        let repeats: Int
        let warmup: Int
        let cpu: BenchRecord.CPU
        let device: BenchRecord.Device?
        let results: [Result]

        struct Input: Encodable {
            let name: String
            let shape: [Int]
            /// The file it was read from, or nil for a seeded input.
            let file: String?
        }

        struct Result: Encodable {
            /// `cpu`, `gpu` or `auto`: what `--backend` asked for.
            let backend: String
            /// Where the model's layers ran: `cpu`, `gpu`, or `mixed`.
            let placement: String
            let runs: Int
            let minMs: Double
            let medianMs: Double
            let p90Ms: Double
            let meanMs: Double
            /// Timed runs over their total time.
            let inferencesPerSecond: Double
        }

        private enum CodingKeys: String, CodingKey {
            case schema, model, inputs, repeats = "repeat", warmup, cpu, device, results
        }
    }

    static func run(_ arguments: Arguments, console: Console) throws -> Int32 {
        let path = try ModelFiles.modelPath(arguments)
        for option in ["--op", "--expr", "--param", "--weights", "--plot"] where arguments.value(option) != nil {
            throw UsageError("bench model.onnx takes the model's inputs (--input, --shape NAME=DIMS, --dim SYMBOL=N), "
                             + "not \(option)")
        }
        guard !arguments.has("--sweep") else { throw UsageError("--sweep measures a layer: drop the model file") }
        let repeats = try arguments.count("--repeat", default: 30, minimum: 1)
        let warmup = try arguments.count("--warmup", default: 3, minimum: 0)
        let word = arguments.value("--backend") ?? "both"
        let wanted: [(word: String, units: ComputeUnits)]
        switch try ValueParsing.backendOrBoth(word) {
        case nil: wanted = [("cpu", .cpuOnly), ("gpu", .gpu)]
        case .cpuOnly?: wanted = [("cpu", .cpuOnly)]
        case .gpu?: wanted = [("gpu", .gpu)]
        case .automatic?: wanted = [("auto", .automatic)]
        }
        var models: [(word: String, model: Model)] = []
        for (word, units) in wanted {
            do {
                models.append((word, try ModelFiles.load(path, computeUnits: units, layers: arguments.values("--layer"),
                                                              console: console)))
            } catch LayerKitError.gpuUnavailable(let why) where wanted.count > 1 {
                console.note("no GPU (\(why)): CPU figures only")
            }
        }
        let (inputs, files, _) = try ModelFiles.inputsOrSeeded(arguments, of: models[0].model,
                                                                 console: console)
        let progress = ProgressBar("bench \(URL(fileURLWithPath: path).lastPathComponent)",
                                   total: models.count * (warmup + repeats), console: console)
        defer { progress.finish() }
        let results = try models.map { word, model -> Record.Result in
            let samples = try Timing.measure(warmup: warmup, runs: repeats, progress: progress) {
                _ = try model.predict(inputs: inputs)
            }
            guard let stats = TimingStats(samples: samples) else { throw LayerKitError.unsupported("no timed runs") }
            let total = samples.reduce(0, +)
            return Record.Result(backend: word, placement: placement(model), runs: stats.runs, minMs: stats.minMs,
                                 medianMs: stats.medianMs, p90Ms: stats.p90Ms, meanMs: total / Double(samples.count),
                                 inferencesPerSecond: Double(samples.count) / (total * 1e-3))
        }
        progress.finish()
        let context = models.lazy.compactMap { $0.model.backend.gpu }.first
        let record = Record(
            model: path,
            inputs: models[0].model.inputs.map { Record.Input(name: $0.name, shape: inputs[$0.name]?.shape ?? [],
                                                               file: files[$0.name]) },
            repeats: repeats, warmup: warmup,
            cpu: .current, device: BenchRecord.Device(context),
            results: results)
        if arguments.has("--json") {
            console.print(try JSONText.line(record))
            return 0
        }
        let described = record.inputs.map { "\($0.name) \(Tensor.describe($0.shape))" + ($0.file.map { " from \($0)" } ?? " seeded") }
        console.print("bench \(path) (\(described.joined(separator: ", "))): \(repeats) runs after \(warmup) warm-up")
        console.print("CPU evaluator: \(DeviceNote.cpu)")
        if let context { console.print("GPU: \(DeviceNote.describe(context))") }
        console.print("")
        let rows = results.map { r in
            [r.backend, r.placement, "\(r.runs)"] + [r.minMs, r.medianMs, r.p90Ms, r.meanMs].map { String(format: "%.3f", $0) }
                + [String(format: "%.1f", r.inferencesPerSecond)]
        }
        let header = ["backend", "runs on", "runs", "min ms", "median ms", "p90 ms", "mean ms", "inferences/s"]
        TextTable.lines(header: header, rows: rows).forEach { console.print($0) }
        if results.contains(where: { $0.placement == "none" }) {
            console.print("note: every output was computed at load (the whole graph folds to constants): "
                          + "a timed run only copies them out and measures no layer")
        }
        return 0
    }

    /// `cpu`, `gpu` or `mixed`: where the model's layers run; `none` when
    /// no layer runs at all, every output having been folded at load.
    static func placement(_ model: Model) -> String {
        let places = Set(model.nodes.compactMap { $0.placement.map { $0.isGPU ? "gpu" : "cpu" } })
        return places.count > 1 ? "mixed" : places.first ?? "none"
    }
}

/// JSON the commands print: one line, keys sorted.
enum JSONText {
    static func line<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
