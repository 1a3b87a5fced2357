import Foundation
import LayerKit

/// `layerkit bench --sweep`: one layer over 1x64xSxS for S = 8 ... 1024 on
/// the CPU and the GPU, with a plain memory copy of the same tensor as the
/// ceiling, and the cost of a 1x1x1x1 dispatch; a table or JSON, and with
/// `--plot` an SVG of throughput against size.
enum BenchSweep {
    static let sizes = [8, 16, 32, 64, 128, 256, 512, 1024]
    static let channels = 64
    /// Past this many elements a point gets proportionally fewer runs (at least 5).
    static let fullRunElements = 1 << 22

    /// One size's medians (ms; the copy, a ceiling, its fastest run) and
    /// throughputs (GB/s at 8 bytes an element: Float32 read and written,
    /// what the copy moves).
    struct Point: Encodable {
        let size: Int
        let elements: Int
        let runs: Int
        let copyMs: Double
        var cpuKernelMs: Double?
        var gpuKernelMs: Double?
        var gpuEndToEndMs: Double?

        func gigabytesPerSecond(_ ms: Double?) -> Double? { ms.map { Double(8 * elements) / ($0 * 1e-3) / 1e9 } }
    }

    /// The cost of one dispatch over a 1x1x1x1 tensor, medians in ms.
    struct DispatchOverhead: Encodable {
        var cpuEndToEndMs: Double?
        var gpuKernelMs: Double?
        var gpuEndToEndMs: Double?
    }

    struct Record: Encodable {
        let schema = "layerkit-bench-sweep/1"
        let op: String
        let channels: Int
        let cpu: BenchRecord.CPU
        let device: BenchRecord.Device?
        let points: [Point]
        let dispatchOverhead: DispatchOverhead
        let copyThreads: Int
    }

    static func run(_ options: LayerOptions, plot: String?, json: Bool, repeats: Int, warmup: Int,
                    cpu: Bool, context: GPUContext?, console: Console) throws -> Int32 {
        let layer = options.layer
        let threads = CPUEvaluator().threadCount
        var points: [Point] = []
        let progress = ProgressBar("bench --sweep", total: sizes.count, console: console)
        defer { progress.finish() }
        for size in sizes {
            defer { progress.advance() }
            let input = try Tensor.uniform(shape: [1, channels, size, size], in: -10...10, seed: 1)
            let runs = max(5, Int(Double(repeats) * min(1, Double(fullRunElements) / Double(input.count))))
            let warm = min(warmup, runs)
            let copy = try Tensor(shape: input.shape)
            var point = Point(size: size, elements: input.count, runs: runs,
                              copyMs: TimingStats(samples: Timing.measure(warmup: warm, runs: runs) {
                                  copyTensor(input, into: copy, threads: threads)
                              })?.minMs ?? 0)
            if cpu {
                let rows = try BenchWorkloads.cpu(layer, input: input, warmup: warm, runs: runs)
                point.cpuKernelMs = rows.first { $0.measure == "kernel" }?.stats.medianMs
            }
            if let context {
                let rows = try BenchWorkloads.gpu(layer, input: input, context: context, warmup: warm, runs: runs,
                                                  compareTimestamps: false).measurements
                point.gpuKernelMs = rows.first { $0.measure == "kernel" }?.stats.medianMs
                point.gpuEndToEndMs = rows.first { $0.measure == "endToEnd" }?.stats.medianMs
            }
            points.append(point)
            // On a terminal the bar says it; in a log, one line a size.
            if !json && !progress.isVisible { console.note("sweep: \(size)x\(size) done (\(runs) runs)") }
        }
        let overhead = try dispatchOverhead(layer, context: context, cpu: cpu, repeats: max(repeats, 30))
        progress.finish()
        let record = Record(op: options.name, channels: channels,
                            cpu: .current, device: BenchRecord.Device(context),
                            points: points, dispatchOverhead: overhead, copyThreads: threads)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            console.print(String(decoding: try encoder.encode(record), as: UTF8.self))
        } else {
            for line in table(record, context: context) { console.print(line) }
        }
        if let plot {
            try ReportFile.write(Data(SweepPlot.svg(record, context: context).utf8), to: plot)
            if !json { console.print("plot: \(plot)") }
        }
        return 0
    }

    /// Medians of a 1x1x1x1 run: what a dispatch costs with no work in it.
    static func dispatchOverhead(_ layer: Layer, context: GPUContext?, cpu: Bool, repeats: Int) throws -> DispatchOverhead {
        let input = try Tensor.uniform(shape: [1, 1, 1, 1], in: -10...10, seed: 1)
        var result = DispatchOverhead()
        if cpu {
            let rows = try BenchWorkloads.cpu(layer, input: input, warmup: 5, runs: repeats)
            result.cpuEndToEndMs = rows.first { $0.measure == "endToEnd" }?.stats.medianMs
        }
        if let context {
            let rows = try BenchWorkloads.gpu(layer, input: input, context: context, warmup: 5, runs: repeats,
                                              compareTimestamps: false).measurements
            result.gpuKernelMs = rows.first { $0.measure == "kernel" }?.stats.medianMs
            result.gpuEndToEndMs = rows.first { $0.measure == "endToEnd" }?.stats.medianMs
        }
        return result
    }

    /// The text report: device line, one row per size, the dispatch overhead.
    static func table(_ record: Record, context: GPUContext?) -> [String] {
        func cell(_ value: Double?) -> String { value.map { String(format: "%10.3f", $0) } ?? String(repeating: " ", count: 9) + "-" }
        var lines = ["sweep \(record.op) 1x\(record.channels)xSxS; medians (the copy: its fastest run); "
                     + "GB/s at 8 bytes an element (Float32 in + out)",
                     "CPU evaluator: \(DeviceNote.cpu)"]
        if let context { lines.append("GPU: \(DeviceNote.describe(context))") }
        lines.append("")
        lines.append("      size  runs   copy GB/s    CPU GB/s  GPU kernel  GPU end-to-end  (GB/s)")
        for p in record.points {
            let size = "\(p.size)x\(p.size)"
            lines.append(String(repeating: " ", count: max(0, 10 - size.count)) + size + String(format: " %5d", p.runs)
                         + "  " + cell(p.gigabytesPerSecond(p.copyMs))
                         + "  " + cell(p.gigabytesPerSecond(p.cpuKernelMs)) + "  " + cell(p.gigabytesPerSecond(p.gpuKernelMs))
                         + "      " + cell(p.gigabytesPerSecond(p.gpuEndToEndMs)))
        }
        lines.append("")
        lines.append("dispatch overhead (1x1x1x1): " + overheadText(record.dispatchOverhead))
        return lines
    }

    /// `GPU kernel 0.012 ms, GPU end to end 0.150 ms, CPU end to end 0.001 ms`.
    static func overheadText(_ o: DispatchOverhead) -> String {
        [("GPU kernel", o.gpuKernelMs), ("GPU end to end", o.gpuEndToEndMs), ("CPU end to end", o.cpuEndToEndMs)]
            .compactMap { name, ms in ms.map { String(format: "%@ %.3f ms", name, $0) } }.joined(separator: ", ")
    }
}
