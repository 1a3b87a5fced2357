import Foundation

/// Runs the work of backward passes and remembers where each piece ran: a
/// layer goes to the backend (the GPU when it is in use and the layer has an
/// `encode`, else the CPU with the backend's reason), CPU-only code through
/// `cpu(_:_:)`. `placements` is the training run's placement report.
final class GradientRunner {
    let backend: Backend
    /// The backward op being run (a step's label), under which placements are recorded.
    var currentOp = ""
    /// Every piece of backward work so far: the op it belongs to, what it was
    /// (a layer's name or the CPU work's description) and where it ran.
    private(set) var placements: [(op: String, work: String, placement: Placement)] = []

    init(backend: Backend) { self.backend = backend }

    /// Runs `layer` on `inputs` on the backend; returns its outputs.
    func run(_ layer: Layer, _ inputs: [Tensor]) throws -> [Tensor] {
        let run = try backend.run(layer, inputs: inputs)
        placements.append((currentOp, layer.layerName, run.placement))
        return run.outputs
    }

    /// Runs `body`, CPU code with no GPU form, recorded as `work` on the CPU.
    func cpu<T>(_ work: String, _ body: () throws -> T) rethrows -> T {
        let reason = backend.computeUnits == .cpuOnly ? nil : "\(work) has no GPU backward kernel"
        placements.append((currentOp, work, .cpu(reason: reason)))
        return try body()
    }
}
