import Synchronization

/// Items `0..<count` dealt to `workers` in contiguous runs: worker `w` takes
/// the items of its own run in order, then helps with the others' runs,
/// from where their owners have got to.
///
/// Owning a run keeps a thread on the same part of the data from one call
/// to the next: a convolution whose items are ordered by pixel tile gives
/// each thread the same rows of consecutive layers, whose inputs its own
/// cache then holds (a shared counter deals items to whichever thread asks
/// first, so a layer's rows came from the other core half the time:
/// mobilenet_v2, squeezenet1_1 and efficientnet_b0 ran 2-8% slower at 2
/// threads that way). Helping keeps the balance a shared counter had when
/// one thread is slowed by another process.
final class WorkRuns: Sendable {
    private final class Cursor: Sendable {
        let next: Atomic<Int>
        let end: Int
        init(start: Int, end: Int) {
            next = Atomic(start)
            self.end = end
        }
    }

    private let cursors: [Cursor]

    init(count: Int, workers: Int) {
        let workers = max(1, workers)
        cursors = (0..<workers).map { w in Cursor(start: w * count / workers, end: (w + 1) * count / workers) }
    }

    /// The next item for worker `worker`, or nil when every item is taken.
    func next(for worker: Int) -> Int? {
        for k in 0..<cursors.count {
            let cursor = cursors[(worker + k) % cursors.count]
            // Past the end, the counter only grows: a taken slot is never reused.
            let i = cursor.next.wrappingAdd(1, ordering: .relaxed).oldValue
            if i < cursor.end { return i }
        }
        return nil
    }
}
