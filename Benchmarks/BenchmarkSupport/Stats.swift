/// Summary of repeated timings, in milliseconds.
public struct TimingStats: Codable, Sendable {
    public let runs: Int
    public let medianMs: Double
    public let minMs: Double
    public let p90Ms: Double

    /// Summarizes `samples` (milliseconds); nil when there are none.
    public init?(samples: [Double]) {
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

/// Times `body` `runs` times after `warmup` untimed calls.
public func measure(warmup: Int, runs: Int, _ body: () throws -> Void) rethrows -> [Double] {
    for _ in 0..<warmup { try body() }
    let clock = ContinuousClock()
    var samples: [Double] = []
    samples.reserveCapacity(runs)
    for _ in 0..<runs {
        let elapsed = try clock.measure(body)
        samples.append(Double(elapsed.components.seconds) * 1e3
            + Double(elapsed.components.attoseconds) * 1e-15)
    }
    return samples
}
