import Foundation

/// Records where the time of a run goes, as `ProfileSpan`s on one host
/// timeline: give it to `Backend.run(_:inputs:profiler:)` or to
/// `GPUContext.makeCommandBuffer(profiler:)` and every upload, dispatch,
/// download, submit and fence wait is recorded; time your own steps with
/// `measure`. `ProfileSummary` makes the per-layer table of it and
/// `ChromeTrace` a trace file.
///
/// GPU timestamps count on the device's clock. Where the device calibrates
/// that clock against the host's `CLOCK_MONOTONIC` (the profiler's clock;
/// `VK_EXT_calibrated_timestamps`, lavapipe has it) they are put on the host
/// timeline by that calibration; otherwise the GPU's last mark is placed at
/// the end of the fence wait (its first no earlier than the submit, a GPU
/// total longer than the host interval compressed into it). Either way every
/// GPU span is then clamped into [submit start, wait end]: whatever the load,
/// GPU spans lie inside that interval, in order, never overlapping, with
/// durations >= 0 (`GPUWorkProfile.place`).
///
/// Thread-safe, but `op` labels are one per profiler: profile one run at a time.
public final class Profiler: @unchecked Sendable {
    private let origin = Profiler.monotonicNanoseconds()
    private let lock = NSLock()
    private var recorded: [ProfileSpan] = []
    private var currentOp: String?

    /// Starts an empty profile; its timeline starts now.
    public init() {}

    /// Nanoseconds since the profiler was made.
    public func now() -> Double {
        Double(Profiler.monotonicNanoseconds() &- origin)
    }

    /// `monotonic` (ns of `CLOCK_MONOTONIC`) on this profiler's timeline.
    func timeline(monotonicNanoseconds monotonic: Double) -> Double { monotonic - Double(origin) }

    /// `CLOCK_MONOTONIC` in ns: the clock calibrated GPU timestamps are given on.
    static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// The spans so far, in the order they were recorded.
    public var spans: [ProfileSpan] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    /// Adds `span` as it is.
    public func record(_ span: ProfileSpan) {
        lock.lock()
        defer { lock.unlock() }
        recorded.append(span)
    }

    /// Runs `body` as a span of `kind` timed by the host clock, with the op
    /// of the enclosing `withOp`, if any.
    public func measure<T>(_ kind: ProfileSpan.Kind, _ name: String, shape: [Int]? = nil, bytes: Int? = nil,
                           _ body: () throws -> T) rethrows -> T {
        let op = self.op
        let start = now()
        defer { record(ProfileSpan(kind: kind, name: name, start: start, duration: now() - start,
                                   op: op, shape: shape, bytes: bytes)) }
        return try body()
    }

    /// The op set by the innermost `withOp` running now.
    var op: String? {
        lock.lock()
        defer { lock.unlock() }
        return currentOp
    }

    /// Runs `body` with `op` as the op of the spans recorded meanwhile (a
    /// layer's dispatches, for example), then restores the previous one.
    public func withOp<T>(_ op: String, _ body: () throws -> T) rethrows -> T {
        lock.lock()
        let previous = currentOp
        currentOp = op
        lock.unlock()
        defer {
            lock.lock()
            currentOp = previous
            lock.unlock()
        }
        return try body()
    }
}

extension Optional where Wrapped == Profiler {
    /// `body` under `op` when there is a profiler; just `body` otherwise.
    func withOp(_ op: String, _ body: () throws -> Void) throws {
        if let profiler = self { try profiler.withOp(op, body) } else { try body() }
    }

    /// `layer.evaluate`, recorded as a `cpuLayer` span named `name` (with
    /// the output's shape and the Float32 bytes read and written) when
    /// there is a profiler.
    func evaluate(_ layer: Layer, inputs: [Tensor], outputs: [Tensor], name: String) throws {
        guard let profiler = self else { return try layer.evaluate(inputs: inputs, outputs: outputs) }
        let bytes = 4 * (inputs + outputs).reduce(0) { $0 + $1.count }
        try profiler.measure(.cpuLayer, name, shape: outputs.first?.shape, bytes: bytes) {
            try layer.evaluate(inputs: inputs, outputs: outputs)
        }
    }
}
