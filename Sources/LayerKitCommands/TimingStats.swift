/// Summary of repeated timings, in milliseconds.
package struct TimingStats: Codable, Sendable {
    package let runs: Int
    package let medianMs: Double
    package let minMs: Double
    package let p90Ms: Double

    /// Summarizes `samples` (milliseconds); nil when there are none.
    package init?(samples: [Double]) {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        runs = sorted.count
        minMs = sorted[0]
        // Median of an even count: mean of the middle two.
        let mid = sorted.count / 2
        medianMs = sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
        // Nearest-rank percentile: the smallest sample >= 90% of all samples.
        let rank = Int((0.9 * Double(sorted.count)).rounded(.up))
        p90Ms = sorted[max(0, rank - 1)]
    }
}
