import Foundation

/// One measured variant of a workload: a row of the results table.
public struct BenchRow: Codable, Sendable {
    public let name: String
    public let threads: Int
    public let stats: TimingStats
    /// Elements processed per run.
    public let elements: Int
    /// Bytes moved per run (read + write).
    public let bytes: Int
    /// The range the input was drawn from, where a workload says (OpBench's CPU rows).
    public var inputRange: [Float]? = nil

    public init(name: String, threads: Int, stats: TimingStats, elements: Int, bytes: Int) {
        (self.name, self.threads, self.stats, self.elements, self.bytes) = (name, threads, stats, elements, bytes)
    }

    public var elementsPerSecond: Double { Double(elements) / (stats.medianMs * 1e-3) }
    public var gigabytesPerSecond: Double { Double(bytes) / (stats.medianMs * 1e-3) / 1e9 }
}

/// Prints `rows` as an aligned table, with one ratio column per baseline:
/// the baseline's median over each row's median (times faster than it).
public func printTable(_ rows: [BenchRow], baselines: [(label: String, name: String)]) {
    for line in formatTable(rows, baselines: baselines) { print(line) }
}

/// The lines `printTable` prints.
public func formatTable(_ rows: [BenchRow], baselines: [(label: String, name: String)] = []) -> [String] {
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

/// `rows` as one JSON object per line, for scripts.
public func printJSON(_ rows: [BenchRow]) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    for row in rows { print(String(decoding: try encoder.encode(row), as: UTF8.self)) }
}

private func fmt(_ value: Double) -> String {
    value >= 100 ? String(format: "%.1f", value) : String(format: "%.3f", value)
}
