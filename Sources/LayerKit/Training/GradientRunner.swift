import Foundation

/// Runs the work of backward passes and remembers where each piece ran and
/// how long it took: a layer goes to the backend (the GPU when it is in use
/// and the layer has an `encode`, else the CPU with the backend's reason),
/// CPU-only code through `cpu(_:_:)`. `placements` and `seconds` are the
/// training run's placement and time report (forward steps are recorded
/// here too, as `forward`).
final class GradientRunner {
    let backend: Backend
    /// The backward op being run (a step's label), under which placements are recorded.
    var currentOp = ""
    /// Each kind of backward work so far, once, in first-run order: the op
    /// it belongs to, what it was (a layer's name or the CPU work's
    /// description) and where it ran.
    private(set) var placements: [TrainingWork] = []
    /// Wall seconds spent in each kind of work so far.
    private(set) var seconds: [TrainingWork: Double] = [:]

    init(backend: Backend) { self.backend = backend }

    /// Runs `layer` on `inputs` on the backend; returns its outputs.
    func run(_ layer: Layer, _ inputs: [Tensor], work: String? = nil) throws -> [Tensor] {
        let start = ContinuousClock.now
        let run = try backend.run(layer, inputs: inputs)
        record(work ?? layer.layerName, run.placement, since: start)
        return run.outputs
    }

    /// Runs `body`, CPU code with no GPU form, recorded as `work` on the CPU.
    func cpu<T>(_ work: String, _ body: () throws -> T) rethrows -> T {
        let reason = backend.computeUnits == .cpuOnly ? nil : "\(work) has no GPU kernel"
        let start = ContinuousClock.now
        defer { record(work, .cpu(reason: reason), since: start) }
        return try body()
    }

    /// Records `work` of the current op as run at `placement` (listed once
    /// per kind), and the time since `start`.
    func record(_ work: String, _ placement: Placement, since start: ContinuousClock.Instant? = nil) {
        record(work, placement, seconds: start.map { (ContinuousClock.now - $0).inSeconds } ?? 0)
    }

    /// Records `work` of the current op as run at `placement`, taking `elapsed` seconds.
    func record(_ work: String, _ placement: Placement, seconds elapsed: Double) {
        let entry = TrainingWork(op: currentOp, work: work, placement: placement)
        if let total = seconds[entry] {
            seconds[entry] = total + elapsed
        } else {
            seconds[entry] = elapsed
            placements.append(entry)
        }
    }
}

/// Where one kind of training work ran: the op (a step's label, `loss`,
/// `optimizer`), the work (`forward`, a backward layer's name or what the
/// CPU did) and the placement, with the reason when the CPU ran it although
/// the GPU was allowed.
public struct TrainingWork: Hashable, Sendable, CustomStringConvertible {
    public let op: String
    public let work: String
    public let placement: Placement

    public init(op: String, work: String, placement: Placement) {
        self.op = op
        self.work = work
        self.placement = placement
    }

    /// `conv (Conv): Conv weight gradient on the CPU (no GPU kernel)`.
    public var description: String {
        switch placement {
        case .gpu: return "\(op): \(work) on the GPU"
        case .cpu(let reason): return "\(op): \(work) on the CPU" + (reason.map { " (\($0))" } ?? "")
        }
    }
}
