import Synchronization

/// The thread count of the CPU work that runs on the current thread: the
/// `threads` of the backend whose run this is, set for the length of one
/// run (a task-local, so it reaches every layer's `evaluate` without a
/// parameter on `Layer`), or one per processor the process may use.
/// `CPUEvaluator`, `forEachChunk`'s callers and the layers' loops read it.
package enum CPUThreads {
    /// The count set for the current run; nil: one per active processor.
    @TaskLocal static var limit: Int?
    /// Where tests see how many threads the CPU loops of a run were given.
    @TaskLocal package static var observer: CPUThreadObserver?

    /// The threads the current run's CPU work may use (at least 1).
    static var current: Int { max(1, limit ?? activeProcessorCount) }

    /// Runs `body` with `threads` (nil: the default) as the current count.
    package static func with<T>(_ threads: Int?, _ body: () throws -> T) rethrows -> T {
        try $limit.withValue(threads ?? limit, operation: body)
    }

    /// Notes that a loop ran on `workers` threads, for `observer`.
    static func record(_ workers: Int) { observer?.record(workers) }
}

/// Records the most threads a CPU loop was given while it was the
/// current `CPUThreads.observer` (for tests of a thread count).
package final class CPUThreadObserver: Sendable {
    private let peak = Mutex(0)
    package init() {}

    /// The most threads any one loop ran on so far.
    package var peakWorkers: Int { peak.withLock { $0 } }

    func record(_ workers: Int) { peak.withLock { $0 = max($0, workers) } }
}
