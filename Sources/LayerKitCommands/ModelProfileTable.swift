import Foundation
import LayerKit

/// The per-layer report of a profiled model run: each layer's time, share
/// of the wall time, bandwidth and backend, then where the rest went.
enum ModelProfileTable {
    static func print(_ profile: ModelProfile, nodes: [Model.NodeDescription], console: Console) {
        let wall = profile.wallNanoseconds
        let placements = Dictionary(nodes.map { ($0.name, $0.placement) }) { a, _ in a }
        let layers = profile.layerSpans
        let rows = layers.map { span in
            [span.name, span.op, ModelFiles.describe(placements[span.name] ?? nil),
             milliseconds(span.durationNanoseconds), percent(span.durationNanoseconds, of: wall),
             gigabytesPerSecond(span.bytes, span.durationNanoseconds), Tensor.describe(span.shape)]
        }
        console.print("per layer (GPU layers by GPU timestamps, CPU layers by the host clock):")
        TextTable.lines(header: ["layer", "op", "runs on", "ms", "share", "GB/s", "output"], rows: rows)
            .forEach { console.print("  " + $0) }
        func total(_ kinds: Set<ModelProfile.Kind>) -> Double {
            profile.spans.filter { kinds.contains($0.kind) }.reduce(0) { $0 + $1.durationNanoseconds }
        }
        let gpuLayers = total([.gpuLayer]), cpuLayers = total([.cpuLayer])
        let transfers = total([.upload, .download])
        let record = total([.record]), submit = total([.submit])
        // The GPU works while the host waits: waiting beyond that is overhead.
        let idleWait = max(0, total([.wait]) - gpuLayers - transfers)
        let other = wall - gpuLayers - cpuLayers - transfers - record - submit - idleWait
        console.print("where the wall time went:")
        let parts: [(String, Double)] = [
            ("GPU layers (kernels)", gpuLayers), ("CPU layers", cpuLayers), ("transfers (GPU copies)", transfers),
            ("recording command buffers", record), ("submit", submit), ("wait beyond GPU work", idleWait),
            ("other host work (conversions, allocation)", other), ("wall time", wall),
        ]
        TextTable.lines(header: ["part", "ms", "share"],
                        rows: parts.map { [$0.0, milliseconds($0.1), percent($0.1, of: wall)] })
            .forEach { console.print("  " + $0) }
    }

    private static func milliseconds(_ nanoseconds: Double) -> String { String(format: "%.3f", nanoseconds / 1e6) }

    private static func percent(_ part: Double, of whole: Double) -> String {
        whole > 0 ? String(format: "%.1f%%", 100 * part / whole) : "-"
    }

    private static func gigabytesPerSecond(_ bytes: Int, _ nanoseconds: Double) -> String {
        nanoseconds > 0 ? String(format: "%.2f", Double(bytes) / nanoseconds) : "-"
    }
}
