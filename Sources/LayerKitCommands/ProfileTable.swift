import Foundation
import LayerKit

/// A profile as text: one row per layer (time, share of the wall time,
/// GB/s, CPU or GPU, workgroup size), then the rest of the wall time split
/// into uploads, downloads, recording, submit and waiting, so that the rows
/// add up to the wall time. For one op (`layerkit profile --op`) or a model.
enum ProfileTable {
    /// `rowName` heads the first column: `layer`, or `op type` for `ProfileSummary.byOpType`.
    static func lines(_ summary: ProfileSummary, rowName: String = "layer") -> [String] {
        let wall = summary.wallNanoseconds
        func ms(_ ns: Double) -> String { String(format: "%.3f", ns / 1e6) }
        func share(_ ns: Double) -> String { wall > 0 ? String(format: "%.1f%%", 100 * ns / wall) : "-" }
        var rows = [[rowName, "where", "calls", "time ms", "share", "GB/s", "workgroup"]]
        for layer in summary.layers {
            let rate = layer.bytes.map { layer.nanoseconds > 0 ? String(format: "%.2f", Double($0) / layer.nanoseconds) : "-" }
            rows.append([layer.op, layer.onGPU ? "GPU" : "CPU", "\(layer.calls)", ms(layer.nanoseconds),
                         share(layer.nanoseconds), rate ?? "-",
                         layer.workgroupSize?.map(String.init).joined(separator: "x") ?? "-"])
        }
        rows.append(["layers", "", "", ms(summary.layerNanoseconds), share(summary.layerNanoseconds), "", ""])
        var lines = align(rows, leftColumns: 2)
        lines.append("")
        lines.append("wall - layers = \(ms(wall - summary.layerNanoseconds)) ms, spent on:")
        var overhead = summary.overhead.map { ["  " + $0.label, ms($0.nanoseconds), share($0.nanoseconds)] }
        overhead.append(["wall time", ms(wall), share(wall)])
        lines += align(overhead, leftColumns: 1)
        return lines
    }

    /// `rows` as columns two spaces apart: the first `leftColumns` left-aligned,
    /// the rest right-aligned; a rule under the first row when it is a header.
    private static func align(_ rows: [[String]], leftColumns: Int) -> [String] {
        let count = rows.map(\.count).max() ?? 0
        let widths = (0..<count).map { c in rows.map { c < $0.count ? $0[c].count : 0 }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { c, text in
                let pad = String(repeating: " ", count: widths[c] - text.count)
                return c < leftColumns ? text + pad : pad + text
            }.joined(separator: "  ").replacingOccurrences(of: " +$", with: "", options: .regularExpression)
        }
    }
}
