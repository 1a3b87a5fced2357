import Foundation

/// `rows` as an aligned table, with one ratio column per baseline: the
/// baseline's median over each row's median (times faster than it).
package func formatTable(_ rows: [BenchRow], baselines: [(label: String, name: String)] = []) -> [String] {
    let bases = baselines.map { baseline in rows.first { $0.name == baseline.name }?.stats.medianMs }
    let header = ["variant", "threads", "runs", "median ms", "min ms", "p90 ms", "Gelem/s", "GB/s"]
        + baselines.map { "\($0.label)/this" }
    let body = rows.map { row -> [String] in
        let s = row.stats
        let ratios = bases.map { base in base.map { String(format: "%.1fx", $0 / s.medianMs) } ?? "-" }
        return [row.name, "\(row.threads)", "\(s.runs)", fmt(s.medianMs), fmt(s.minMs), fmt(s.p90Ms),
                fmt(row.elementsPerSecond / 1e9), fmt(row.gigabytesPerSecond)] + ratios
    }
    let widths = header.indices.map { c in ([header] + body).map { $0[c].count }.max() ?? 0 }
    var lines: [String] = []
    for (i, line) in ([header] + body).enumerated() {
        let cells = line.enumerated().map { c, text in
            c == 0 ? text.padding(toLength: widths[c], withPad: " ", startingAt: 0)
                   : String(repeating: " ", count: widths[c] - text.count) + text
        }
        lines.append(cells.joined(separator: "  "))
        if i == 0 { lines.append(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")) }
    }
    return lines
}

private func fmt(_ value: Double) -> String {
    value >= 100 ? String(format: "%.1f", value) : String(format: "%.3f", value)
}
