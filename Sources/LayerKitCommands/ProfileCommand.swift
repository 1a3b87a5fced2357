import Foundation
import LayerKit

/// `layerkit profile --op NAME` or `layerkit profile model.onnx`: runs of
/// a layer or a model after a warm-up, every step recorded (`Profiler`);
/// for the run with the median wall time, the per-layer table with the rest
/// of the wall time accounted for, and with `--trace` a Chrome trace-event file.
enum ProfileCommand {
    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, command: .profile)
        let threads = try arguments.threads()
        return try CPUThreads.with(threads) { try run(arguments, console: console) }
    }

    private static func run(_ arguments: Arguments, console: Console) throws -> Int32 {
        if !arguments.positional.isEmpty { return try profileModel(arguments, console: console) }
        if let option = (["--input", "--dim"] + ImageOptions.names).first(where: arguments.has) {
            throw UsageError("\(option) is for a model: give MODEL.onnx (layerkit help profile)")
        }
        guard arguments.values("--shape").count <= 1 else { throw UsageError("--shape is given twice; a layer takes one") }
        let options = try LayerOptions(arguments)
        let shape = try ValueParsing.shape(arguments.value("--shape") ?? BenchCommand.defaultShape)
        let units = try ValueParsing.backend(arguments.value("--backend") ?? "gpu")
        let tracePath = arguments.value("--trace")
        if let tracePath { try ReportFile.check(tracePath, fileExtension: "json", notAmong: ReadFiles(options.weightFiles)) }

        let backend = try Backend(computeUnits: units, notice: { console.note($0) })
        let input = try Tensor.uniform(shape: shape, in: -10...10, seed: 1)
        // Warm-up: pipelines, staging buffers, and memory the allocator has touched before.
        let warmup = try arguments.count("--warmup", default: 3, minimum: 0)
        // Several profiled runs; the one with the median wall time is shown.
        let repeats = try arguments.count("--repeat", default: 5, minimum: 1)
        let runs = try ProgressBar.forEach("profile \(options.name)", total: warmup + repeats, console: console) { i -> (Profiler, ProfileSummary)? in
            guard i >= warmup else {
                _ = try backend.run(options.layer, inputs: [input])
                return nil
            }
            let profiler = Profiler()
            _ = try profiler.measure(.run, "run \(options.name)") {
                try backend.run(options.layer, inputs: [input], profiler: profiler)
            }
            return (profiler, ProfileSummary(spans: profiler.spans))
        }.compactMap { $0 }.sorted { $0.1.wallNanoseconds < $1.1.wallNanoseconds }
        let (profiler, summary) = runs[(runs.count - 1) / 2]

        try report("\(options.name) [\(options.parameterText)] shape \(Tensor.describe(shape))", backend: backend,
                   repeats: repeats, warmup: warmup, median: (profiler, summary), tracePath: tracePath,
                   arguments: arguments, console: console)
        return 0
    }

    /// `layerkit profile model.onnx [--input ...]`: the same for a whole
    /// model, one table row per node; inputs from files, or seeded uniform
    /// [0, 1) of the model's shapes.
    static func profileModel(_ arguments: Arguments, console: Console) throws -> Int32 {
        let path = try ModelFiles.modelPath(arguments)
        guard arguments.values("--op").isEmpty, arguments.values("--expr").isEmpty else {
            throw UsageError("profile a model or layers (--op/--expr), not both")
        }
        let units = try ValueParsing.backend(arguments.value("--backend") ?? "gpu")
        let tracePath = arguments.value("--trace")
        if let tracePath { try ReportFile.check(tracePath, fileExtension: "json", notAmong: ReadFiles([path])) }
        let model = try ModelFiles.load(path, computeUnits: units, layers: arguments.values("--layer"),
                                        console: console)
        let (inputs, inputFiles, _) = try ModelFiles.inputsOrSeeded(arguments, of: model,
                                                                     console: console)
        if let tracePath {
            try ReportFile.check(tracePath, fileExtension: "json", notAmong: ReadFiles(inputFiles.values.sorted() + [path]))
        }
        let warmup = try arguments.count("--warmup", default: 3, minimum: 0)
        let repeats = try arguments.count("--repeat", default: 5, minimum: 1)
        let runs = try ProgressBar.forEach("profile \(URL(fileURLWithPath: path).lastPathComponent)", total: warmup + repeats,
                                           console: console) { i -> (Profiler, ProfileSummary)? in
            guard i >= warmup else {
                _ = try model.predict(inputs: inputs)
                return nil
            }
            let profiler = Profiler()
            _ = try model.predict(inputs: inputs, profiler: profiler)
            return (profiler, ProfileSummary(spans: profiler.spans))
        }.compactMap { $0 }.sorted { $0.1.wallNanoseconds < $1.1.wallNanoseconds }
        try report("model \(path)", backend: model.backend, repeats: repeats, warmup: warmup,
                   median: runs[(runs.count - 1) / 2], tracePath: tracePath, arguments: arguments, console: console)
        return 0
    }

    /// Prints the device, the median run's table (`--by-op`: per op type;
    /// `--sort time`: slowest first) and, with `tracePath`, writes its trace.
    private static func report(_ what: String, backend: Backend, repeats: Int, warmup: Int,
                               median: (profiler: Profiler, summary: ProfileSummary), tracePath: String?,
                               arguments: Arguments, console: Console) throws {
        let sort = arguments.value("--sort") ?? "order"
        guard ["order", "time"].contains(sort) else { throw UsageError("--sort \(sort): expected order or time") }
        let byOp = arguments.has("--by-op")
        let summary = byOp ? median.summary.byOpType() : sort == "time" ? median.summary.sortedByTime() : median.summary
        let device = backend.gpu.map { "GPU: " + DeviceNote.describe($0) } ?? "CPU evaluator: \(DeviceNote.cpu)"
        if let tracePath {
            let title = "layerkit profile \(what) — \(device)"
            try ReportFile.write(ChromeTrace.json(median.profiler.spans, title: title, metadata: ["device": device]),
                                 to: tracePath)
        }
        if arguments.has("--json") {
            console.print(try JSONText.line(ProfileRecord(what, backend: backend, repeats: repeats, warmup: warmup,
                                                          summary: summary, trace: tracePath)))
            return
        }
        console.print("profile \(what), the run with the median wall time of \(repeats) after \(warmup) warm-up")
        console.print(device)
        if let context = backend.gpu {
            console.print("CPU evaluator: \(DeviceNote.cpu)")
            if !context.deviceInfo.supportsTimestamps {
                console.note("the device records no compute timestamps: kernels and GPU copies are not timed")
            }
        }
        console.print("")
        for line in ProfileTable.lines(summary, rowName: byOp ? "op type" : "layer") { console.print(line) }
        if let tracePath {
            console.print("")
            console.print("trace: \(tracePath) (open in ui.perfetto.dev or chrome://tracing)")
        }
    }
}
