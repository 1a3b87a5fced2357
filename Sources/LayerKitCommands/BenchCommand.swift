import Foundation
import LayerKit

/// `layerkit bench`: one layer's kernel and end-to-end times on the CPU
/// and the GPU (median, min, p90, elements/s, GB/s), as a table or one JSON
/// record; `--sweep` measures sizes 8x8 to 1024x1024 instead and draws them;
/// `bench model.onnx` times a whole model (`BenchModel`).
enum BenchCommand {
    static let defaultShape = "1x64x256x256"

    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, command: .bench)
        let threads = try arguments.threads()
        return try CPUThreads.with(threads) { try run(arguments, console: console) }
    }

    private static func run(_ arguments: Arguments, console: Console) throws -> Int32 {
        if !arguments.positional.isEmpty { return try BenchModel.run(arguments, console: console) }
        if let option = (["--input", "--dim"] + ImageOptions.names).first(where: arguments.has) {
            throw UsageError("\(option) is for a model's inputs: bench model.onnx \(option) ...")
        }
        guard arguments.values("--shape").count <= 1 else { throw UsageError("--shape is given twice; a layer takes one") }
        let repeats = try arguments.count("--repeat", default: arguments.has("--sweep") ? 10 : 30, minimum: 1)
        let warmup = try arguments.count("--warmup", default: 3, minimum: 0)
        let backendWord = arguments.value("--backend") ?? "both"
        _ = try ValueParsing.backendOrBoth(backendWord)
        let options = try layerOptions(arguments)
        if arguments.has("--sweep") {
            guard arguments.value("--shape") == nil else { throw UsageError("--sweep sets its own shapes: drop --shape") }
            if let plot = arguments.value("--plot") {
                try ReportFile.check(plot, fileExtension: "svg", notAmong: ReadFiles(options.weightFiles))
            }
            let (cpu, context) = try targets(backendWord, layer: options.layer, console: console)
            return try BenchSweep.run(options, plot: arguments.value("--plot"), json: arguments.has("--json"),
                                      repeats: repeats, warmup: warmup, cpu: cpu, context: context, console: console)
        }
        guard arguments.value("--plot") == nil else { throw UsageError("--plot draws a sweep: add --sweep") }
        let shape = try ValueParsing.shape(arguments.value("--shape") ?? defaultShape)
        let input = try Tensor.uniform(shape: shape, in: -10...10, seed: 1)
        let (cpu, context) = try targets(backendWord, layer: options.layer, console: console)

        var measurements: [BenchMeasurement] = []
        // Runs: the CPU's two measures, the GPU's two backends a run.
        let progress = ProgressBar("bench \(options.name)", total: (warmup + repeats) * ((cpu ? 2 : 0) + (context == nil ? 0 : 1)),
                                   console: console)
        defer { progress.finish() }
        if cpu {
            measurements += try BenchWorkloads.cpu(options.layer, input: input, warmup: warmup, runs: repeats,
                                                   progress: progress)
        }
        var overhead: Double?
        if let context {
            let result = try BenchWorkloads.gpu(options.layer, input: input, context: context, warmup: warmup, runs: repeats,
                                                progress: progress)
            measurements += result.measurements
            overhead = result.timestampOverhead
        }
        progress.finish()
        let record = BenchRecord(op: options.name, parameters: options.parameterText, shape: shape,
                                 elements: input.count, repeats: repeats, warmup: warmup, context: context,
                                 results: measurements, timestampOverhead: overhead)
        if arguments.has("--json") {
            console.print(try record.json())
            return 0
        }
        console.print("bench \(options.name) [\(options.parameterText)] shape \(Tensor.describe(shape)) "
                      + "(\(input.count) elements): medians of \(repeats) runs after \(warmup) warm-up")
        console.print("CPU evaluator: \(DeviceNote.cpu)")
        if let context { console.print("GPU: \(DeviceNote.describe(context))") }
        console.print("")
        for line in formatTable(measurements.map(\.row)) { console.print(line) }
        if let overhead {
            console.print("")
            console.print(String(format: "timestamps on vs off: %+.1f%% end to end (target: under 5%%)", overhead * 100))
        }
        return 0
    }

    /// The layer options, Swish when no `--op`/`--expr` is given.
    static func layerOptions(_ arguments: Arguments) throws -> LayerOptions {
        guard arguments.value("--op") == nil, arguments.value("--expr") == nil else { return try LayerOptions(arguments) }
        guard arguments.value("--param") == nil, arguments.value("--weights") == nil else {
            throw UsageError("--param and --weights apply to an --op or --expr given before them")
        }
        return try LayerOptions(Arguments(["--op", "Swish"], valued: LayerOptions.valued))
    }

    /// What `--backend` asks to measure: CPU rows, and the device of the
    /// GPU rows. `cpu`: the CPU; `gpu`: the GPU (`Backend` throws when there
    /// is none); `auto`: where `.automatic` places the layer; `both`: the
    /// CPU, and the GPU when there is one (else a note). A layer without a
    /// GPU implementation is measured on the CPU, with a note.
    static func targets(_ word: String, layer: Layer, console: Console) throws -> (cpu: Bool, gpu: GPUContext?) {
        guard let units = try ValueParsing.backendOrBoth(word) else {
            let backend = try Backend(computeUnits: .automatic, notice: { console.note($0) })
            if backend.gpu == nil { console.note("no GPU (\(backend.gpuUnavailableReason ?? "none")): CPU figures only") }
            return (true, backend.gpu)
        }
        let backend = try Backend(computeUnits: units, notice: { console.note($0) })
        let placement = backend.placement(for: layer)
        if case .cpu(let reason?) = placement { console.note(reason) }
        return placement.isGPU ? (false, backend.gpu) : (true, nil)
    }
}
