import Foundation

/// Runs the work of backward passes and remembers where each piece ran: a
/// layer goes to the backend (the GPU when it is in use and the layer has an
/// `encode`, else the CPU with the backend's reason), CPU-only code through
/// `cpu(_:_:)`. `placements` is the training run's placement report.
final class GradientRunner {
    let backend: Backend
    /// The backward op being run (a step's label), under which placements are recorded.
    var currentOp = ""
    /// Each kind of backward work so far, once, in first-run order: the op
    /// it belongs to, what it was (a layer's name or the CPU work's
    /// description) and where it ran.
    private(set) var placements: [BackwardPlacement] = []
    private var seen: Set<BackwardPlacement> = []

    init(backend: Backend) { self.backend = backend }

    /// Runs `layer` on `inputs` on the backend; returns its outputs.
    func run(_ layer: Layer, _ inputs: [Tensor]) throws -> [Tensor] {
        let run = try backend.run(layer, inputs: inputs)
        record(layer.layerName, run.placement)
        return run.outputs
    }

    /// Runs `body`, CPU code with no GPU form, recorded as `work` on the CPU.
    func cpu<T>(_ work: String, _ body: () throws -> T) rethrows -> T {
        let reason = backend.computeUnits == .cpuOnly ? nil : "\(work) has no GPU backward kernel"
        record(work, .cpu(reason: reason))
        return try body()
    }

    /// Records `work` of the current op as run at `placement` (once per kind).
    func record(_ work: String, _ placement: Placement) {
        let entry = BackwardPlacement(op: currentOp, work: work, placement: placement)
        if seen.insert(entry).inserted { placements.append(entry) }
    }
}

/// Where one kind of training work ran: the op (a step's label, `loss`,
/// `optimizer`), the work (a layer's name or what the CPU did) and the
/// placement, with the reason when the CPU ran it although the GPU was allowed.
public struct BackwardPlacement: Hashable, Sendable, CustomStringConvertible {
    public let op: String
    public let work: String
    public let placement: Placement

    /// `conv (Conv): Conv weight gradient on the CPU (no GPU kernel)`.
    public var description: String {
        switch placement {
        case .gpu: return "\(op): \(work) on the GPU"
        case .cpu(let reason): return "\(op): \(work) on the CPU" + (reason.map { " (\($0))" } ?? "")
        }
    }
}
