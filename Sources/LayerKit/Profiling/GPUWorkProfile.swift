internal import VulkanCompute

/// The profiling half of a profiled `GPUCommandBuffer`: it brackets every
/// transfer and dispatch with GPU timestamps, times the host's steps, and
/// once the work has completed places the GPU's items on the profiler's
/// timeline (see `Profiler` for how).
final class GPUWorkProfile {
    /// A transfer or dispatch to time on the GPU, and what to say about it.
    struct Item {
        let kind: ProfileSpan.Kind
        let name: String
        var shape: [Int]? = nil
        var workgroupSize: [Int]? = nil
        var bytes: Int? = nil
    }

    /// Marks kept free for the caller's own `timestamp(_:)` calls: past
    /// `CommandBuffer.maxTimestamps` minus these, further items go untimed.
    static let reservedMarks = 16

    let profiler: Profiler
    /// Per timestamp mark of the command buffer, in order: whether it is the profile's.
    private(set) var markOwners: [Bool] = []
    private var items: [(item: Item, op: String?, begin: Int, end: Int)] = []
    private var submitStart: Double?
    private var waitEnd: Double?
    private var finished = false

    init(profiler: Profiler) { self.profiler = profiler }

    /// Records a caller's mark (not the profile's).
    func noteCallerMark() { markOwners.append(false) }

    /// Records `work` (timing its recording on the host) between two marks
    /// of its own on `commands`, or without marks when the device has no
    /// timestamps or the marks run out.
    func bracket(_ item: Item, on commands: CommandBuffer, _ work: () throws -> Void) throws {
        func record() throws { try profiler.measure(.record, "record: \(item.name)", work) }
        let timed = commands.device.info.supportsTimestamps
            && markOwners.count + 2 <= CommandBuffer.maxTimestamps - GPUWorkProfile.reservedMarks
        guard timed else { return try record() }
        let begin = markOwners.count
        try commands.timestamp(item.name)
        markOwners.append(true)
        try record()
        try commands.timestamp(item.name)
        markOwners.append(true)
        items.append((item, profiler.op, begin, begin + 1))
    }

    /// Runs a host step as a span; remembers when the submit started and the wait ended.
    func host<T>(_ kind: ProfileSpan.Kind, _ name: String, shape: [Int]? = nil, bytes: Int? = nil,
                 _ body: () throws -> T) rethrows -> T {
        if kind == .submit { submitStart = profiler.now() }
        defer { if kind == .wait { waitEnd = profiler.now() } }
        return try profiler.measure(kind, name, shape: shape, bytes: bytes, body)
    }

    /// Turns the completed buffer's marks (`stamps`, ns from its first mark;
    /// `firstOnMonotonicClock`, the first mark on `CLOCK_MONOTONIC` where the
    /// device calibrates) into GPU spans; once.
    func finish(stamps: [CommandBuffer.Timestamp], firstOnMonotonicClock: Double?) {
        guard !finished, stamps.count == markOwners.count, !stamps.isEmpty,
              let submitStart, let waitEnd else { return }
        finished = true
        let first = firstOnMonotonicClock.map { profiler.timeline(monotonicNanoseconds: $0) }
        let times = GPUWorkProfile.place(stamps.map(\.nanoseconds), first: first, submit: submitStart, waitEnd: waitEnd)
        for (item, op, begin, end) in items {
            profiler.record(ProfileSpan(kind: item.kind, name: item.name, start: times[begin],
                                        duration: times[end] - times[begin], timedOnGPU: true, op: op,
                                        shape: item.shape, workgroupSize: item.workgroupSize, bytes: item.bytes))
        }
    }

    /// Host times of GPU marks `stamps` (ns from the first mark, in order):
    /// from `first` (the first mark on the host timeline, calibrated) when
    /// given, else with the last mark at `waitEnd` — compressed into
    /// [submit, waitEnd] when the GPU's total is longer than that — and then
    /// clamped into [submit, waitEnd]. The result is non-decreasing and
    /// inside the interval for any input, so spans made from it lie inside
    /// it, in order, with durations >= 0.
    static func place(_ stamps: [Double], first: Double?, submit: Double, waitEnd: Double) -> [Double] {
        let end = max(submit, waitEnd)
        let total = stamps.last ?? 0
        let times: [Double]
        if let first {
            times = stamps.map { first + $0 }
        } else if total > end - submit {
            let scale = total > 0 ? (end - submit) / total : 0
            times = stamps.map { submit + $0 * scale }
        } else {
            times = stamps.map { end - total + $0 }
        }
        var previous = submit
        return times.map { time in
            previous = min(max(time, previous), end)
            return previous
        }
    }
}
