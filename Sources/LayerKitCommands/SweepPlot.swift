import LayerKit

/// The sweep's picture: throughput against image size for the CPU
/// evaluator, the GPU kernel and the GPU end to end, under the measured
/// memory-copy bandwidth.
enum SweepPlot {
    static func svg(_ record: BenchSweep.Record, context: GPUContext?) -> String {
        let points = record.points
        func line(_ label: String, _ color: String, dashed: Bool = false, _ ms: (BenchSweep.Point) -> Double?) -> SVGLinePlot.Series? {
            let xy = points.compactMap { p in p.gigabytesPerSecond(ms(p)).map { (x: Double(p.size), y: $0) } }
            return xy.isEmpty ? nil : SVGLinePlot.Series(label: label, color: color, dashed: dashed, points: xy)
        }
        let emulated = context.map(DeviceNote.isEmulated) ?? false
        let gpuName = context.map { "GPU" + (DeviceNote.isEmulated($0) ? " (emulated)" : "") } ?? "GPU"
        let series = [
            line("memory copy (ceiling, fastest run)", "#555", dashed: true) { $0.copyMs },
            line("CPU evaluator", "#1f77b4") { $0.cpuKernelMs },
            line("\(gpuName) kernel", "#d62728") { $0.gpuKernelMs },
            line("\(gpuName) end to end", "#ff7f0e") { $0.gpuEndToEndMs },
        ].compactMap { $0 }
        var subtitle = ["CPU evaluator: \(DeviceNote.cpu); memory copy on \(DeviceNote.threads(record.copyThreads))"]
        if let context {
            subtitle.append("GPU: \(context.deviceInfo.name), \(context.deviceInfo.kind.rawValue)"
                            + (emulated ? " — EMULATED on the CPU, not GPU speed" : ""))
        }
        return SVGLinePlot(
            title: "\(record.op) throughput vs image size, 1x\(record.channels)xSxS (medians)",
            subtitle: subtitle,
            xLabel: "image size S (1x\(record.channels)xSxS tensor)",
            yLabel: "GB/s (8 bytes per element: Float32 read + write)",
            xTicks: points.map { (x: Double($0.size), label: "\($0.size)²") },
            series: series,
            notes: ["dispatch overhead, 1x1x1x1: " + BenchSweep.overheadText(record.dispatchOverhead),
                    "end to end: Float32 in, upload, dispatch, download, Float32 out; kernel: GPU timestamps around the dispatch",
                    "the GPU kernel moves fp16 (4 bytes an element); it is drawn at 8 like the rest, i.e. as elements/s x 8"]
        ).svg()
    }
}
