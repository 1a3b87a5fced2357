import Foundation
import LayerKit

/// `layerkit profile --op NAME`: runs of a layer after a warm-up, every
/// step recorded (`Profiler`); for the run with the median wall time, the
/// per-layer table with the rest of the wall time accounted for, and with
/// `--trace` a Chrome trace-event file.
enum ProfileCommand {
    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, valued: LayerOptions.valued.union(["--shape", "--backend", "--trace", "--warmup", "--repeat"]))
        if let file = arguments.positional.first {
            throw UsageError("profiling a model (\(file)) is not available yet; profile one layer with --op NAME")
        }
        let options = try LayerOptions(arguments)
        let shape = try ValueParsing.shape(arguments.value("--shape") ?? BenchCommand.defaultShape)
        let units: ComputeUnits
        switch (arguments.value("--backend") ?? "gpu").lowercased() {
        case "gpu": units = .cpuAndGPU
        case "cpu": units = .cpuOnly
        case let other: throw UsageError("--backend \(other): expected cpu or gpu")
        }
        let tracePath = arguments.value("--trace")
        if let tracePath { try ReportFile.check(tracePath, fileExtension: "json", notAmong: options.weightFiles) }

        let backend = Backend(computeUnits: units, notice: { console.note($0) })
        if units == .cpuAndGPU, backend.gpu == nil {
            throw LayerKitError.gpuUnavailable("no GPU to profile: \(backend.gpuUnavailableReason ?? "none") (--backend cpu profiles the CPU)")
        }
        let input = try Tensor.uniform(shape: shape, in: -10...10, seed: 1)
        // Warm-up: pipelines, staging buffers, and memory the allocator has touched before.
        let warmup = try BenchCommand.count(arguments, "--warmup", default: 3, minimum: 0)
        for _ in 0..<warmup {
            _ = try backend.run(options.layer, inputs: [input])
        }
        // Several profiled runs; the one with the median wall time is shown.
        let repeats = try BenchCommand.count(arguments, "--repeat", default: 5, minimum: 1)
        let runs = try (0..<repeats).map { _ in
            let profiler = Profiler()
            _ = try profiler.measure(.run, "run \(options.name)") {
                try backend.run(options.layer, inputs: [input], profiler: profiler)
            }
            return (profiler, ProfileSummary(spans: profiler.spans))
        }.sorted { $0.1.wallNanoseconds < $1.1.wallNanoseconds }
        let (profiler, summary) = runs[(runs.count - 1) / 2]

        let device = backend.gpu.map { "GPU: " + DeviceNote.describe($0) } ?? "CPU evaluator: \(DeviceNote.cpu)"
        console.print("profile \(options.name) [\(options.parameterText)] shape \(Tensor.describe(shape)), "
                      + "the run with the median wall time of \(repeats) after \(warmup) warm-up")
        console.print(device)
        if let context = backend.gpu {
            console.print("CPU evaluator: \(DeviceNote.cpu)")
            if !context.deviceInfo.supportsTimestamps {
                console.note("the device records no compute timestamps: kernels and GPU copies are not timed")
            }
        }
        console.print("")
        for line in ProfileTable.lines(summary) { console.print(line) }
        if let tracePath {
            let title = "layerkit profile \(options.name) \(Tensor.describe(shape)) — \(device)"
            try ReportFile.write(ChromeTrace.json(profiler.spans, title: title, metadata: ["device": device]), to: tracePath)
            console.print("")
            console.print("trace: \(tracePath) (open in ui.perfetto.dev or chrome://tracing)")
        }
        return 0
    }
}
