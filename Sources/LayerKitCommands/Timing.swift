/// Durations as the numbers reports print, and the timed loop that takes them.
package enum Timing {
    /// `duration` in milliseconds.
    package static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) / 1e15
    }

    /// Milliseconds of each of `runs` calls of `body`, after `warmup` untimed
    /// calls; `progress` advances once a call, outside the timed part.
    package static func measure(warmup: Int, runs: Int, _ body: () throws -> Void) rethrows -> [Double] {
        try measure(warmup: warmup, runs: runs, progress: nil, body)
    }

    static func measure(warmup: Int, runs: Int, progress: ProgressBar?, _ body: () throws -> Void) rethrows -> [Double] {
        for _ in 0..<warmup {
            try body()
            progress?.advance()
        }
        let clock = ContinuousClock()
        var samples: [Double] = []
        samples.reserveCapacity(runs)
        for _ in 0..<runs {
            samples.append(milliseconds(try clock.measure(body)))
            progress?.advance()
        }
        return samples
    }
}
