import Foundation

/// One measured variant of a workload: a row of the results table.
package struct BenchRow: Codable, Sendable {
    package let name: String
    package let threads: Int
    package let stats: TimingStats
    /// Elements processed per run.
    package let elements: Int
    /// Bytes moved per run (read + write).
    package let bytes: Int
    /// The range the input was drawn from, where a workload says (OpBench's CPU rows).
    package var inputRange: [Float]? = nil

    package init(name: String, threads: Int, stats: TimingStats, elements: Int, bytes: Int) {
        (self.name, self.threads, self.stats, self.elements, self.bytes) = (name, threads, stats, elements, bytes)
    }

    package var elementsPerSecond: Double { Double(elements) / (stats.medianMs * 1e-3) }
    package var gigabytesPerSecond: Double { Double(bytes) / (stats.medianMs * 1e-3) / 1e9 }
}
