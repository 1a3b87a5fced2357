import Foundation

/// Records where the time of a run goes, as `ProfileSpan`s on one host
/// timeline: give it to `Backend.run(_:inputs:profiler:)` or to
/// `GPUContext.makeCommandBuffer(profiler:)` and every upload, dispatch,
/// download, submit and fence wait is recorded; time your own steps with
/// `measure`. `ProfileSummary` makes the per-layer table of it and
/// `ChromeTrace` a trace file.
///
/// GPU timestamps count from the command buffer's first mark on the
/// device's clock; they are placed on the host timeline so that the GPU's
/// work ends no later than the fence wait returns and starts no earlier than
/// the submit: its first mark at the later of the submit's start and the
/// wait's end minus the GPU's total.
///
/// Thread-safe, but `op` labels are one per profiler: profile one run at a time.
public final class Profiler: @unchecked Sendable {
    private let origin = DispatchTime.now().uptimeNanoseconds
    private let lock = NSLock()
    private var recorded: [ProfileSpan] = []
    private var currentOp: String?

    /// Starts an empty profile; its timeline starts now.
    public init() {}

    /// Nanoseconds since the profiler was made.
    public func now() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds &- origin)
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
