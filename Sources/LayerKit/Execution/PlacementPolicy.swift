/// The one placement policy, used by single-layer runs and models alike:
/// a layer runs on the GPU when the backend allows it, the layer has
/// `encode`, the device is not a CPU emulation under `.automatic`, and its
/// tensors fit the device's images (a `PerElementLayer` then runs in pieces).
///
/// A `PerElementLayer` run on its own (its tensors start and end on the
/// host) also runs in pieces when an image would exceed
/// `ModelRun.pieceTexels`: streamed piece by piece, its device memory (host
/// memory, on an emulated device) stays a few pieces beyond the tensors,
/// for no extra transfer. Inside a model, values stay in whole images.
///
/// A step that reads a value fp16 storage cannot keep (`HalfRange`: a
/// constant, checked at prepare, or a graph input, checked when a run
/// gives it) runs on the CPU in fp32, as it would on a backend without a
/// GPU. The policy prefers a right answer, slower, to a fast wrong one:
/// the GPU would read 10000..10003 as 10000 and 1e-9 as 0 whatever its
/// kernel does. Only values whose data is known before the run are
/// judged; what a step computes is not (parity checks those, from the CPU
/// reference). Under `.automatic` on an emulated device every step is on
/// the CPU already and the emulation is the reason given.
extension Backend {
    /// Where a step runs: `whyNotGPU` nil means the GPU (in pieces or not).
    struct PlacementDecision {
        let whyNotGPU: String?
        let inPieces: Bool
    }

    /// Why `layer` cannot or should not run on the GPU this backend allows,
    /// whatever its shapes; nil when it may.
    func whyNotGPU(_ layer: Layer) -> String? {
        if let why = whyNoGPUWork { return why }
        if let node = (layer as? TypedStep)?.node ?? (layer as? TypedKernelLayer)?.node, !node.node.subgraphs.isEmpty {
            return ONNXSubgraph.whyOnCPU
        }
        if let step = layer as? TypedStep { return step.whyOnCPU }
        return layer.hasGPUImplementation ? nil : "it has no GPU implementation (encode)"
    }

    /// Why no work at all can use the GPU this backend allows, whatever
    /// the layer: there is none, or under `.automatic` it is a CPU
    /// emulation. Nil under `.cpuOnly` (nothing was asked of a GPU).
    var whyNoGPUWork: String? {
        guard computeUnits != .cpuOnly else { return nil }
        guard let gpu else { return gpuUnavailableReason ?? "no GPU" }
        guard computeUnits == .automatic, gpu.deviceInfo.kind == .cpu else { return nil }
        return "the Vulkan device \(gpu.deviceInfo.name) is a CPU emulation, slower than the CPU evaluator"
    }

    /// Where an optimizer step runs (`Optimizer`): on the GPU whenever the
    /// backend may put any work there, as a layer with `encode` would; its
    /// buffers have no image limits. Nil reason under `.cpuOnly`.
    func placeOptimizerStep() -> Placement {
        guard computeUnits != .cpuOnly else { return .cpu(reason: nil) }
        return whyNoGPUWork.map { .cpu(reason: $0) } ?? .gpu
    }

    /// Announces that `subject` ("Relu", "the optimizer step") runs on the
    /// CPU for `why`, once: when `why` is `whyNoGPUWork`, one line for
    /// all the backend's work instead of one per layer (a training run
    /// would otherwise repeat the device's reason for every op).
    func announceCPU(_ subject: String, why: String) {
        announce(why == whyNoGPUWork ? "everything runs on the CPU evaluator: \(why)" : "\(subject) runs on the CPU: \(why)")
    }

    /// Where `layer` runs on tensors of `inputShapes` giving `outputShapes`;
    /// `fromHost`: the layer runs on its own, its tensors on the host.
    /// `unfaithfulInput`: an input whose known data fp16 storage cannot
    /// keep (its name and what storage would do), if any.
    func place(_ layer: Layer, inputShapes: [[Int]], outputShapes: [[Int]], fromHost: Bool,
               unfaithfulInput: (name: String, range: HalfRange)? = nil) throws -> PlacementDecision {
        guard computeUnits != .cpuOnly else { return PlacementDecision(whyNotGPU: nil, inPieces: false) }
        if let why = whyNotGPU(layer) { return PlacementDecision(whyNotGPU: why, inPieces: false) }
        // Before the pieces decision: a step run in pieces stores its values in fp16 too.
        if let (name, range) = unfaithfulInput {
            return PlacementDecision(whyNotGPU: "its input '\(name)' does not fit fp16 storage: \(range)", inPieces: false)
        }
        guard let gpu else { return PlacementDecision(whyNotGPU: "no GPU", inPieces: false) }
        // A slice image holds ranks 1 to 4 (`Tensor.nchwShape`); one reason per rank, announced once.
        if let shape = (inputShapes + outputShapes).first(where: { !(1...4).contains($0.count) }) {
            return PlacementDecision(whyNotGPU: "a rank-\(shape.count) tensor cannot be a slice image (ranks 1 to 4 can)",
                                     inPieces: false)
        }
        if let limited = layer as? ShapeLimitedGPULayer,
           let why = limited.whyNotGPU(inputShapes: inputShapes, outputShapes: outputShapes) {
            return PlacementDecision(whyNotGPU: why, inPieces: false)
        }
        let perElement = layer is PerElementLayer && inputShapes == outputShapes
        // A slice image holds at least one element: an empty tensor (a Slice or Split part of extent 0) stays on the CPU.
        if let shape = (inputShapes + outputShapes).first(where: { $0.contains(0) }) {
            return PlacementDecision(whyNotGPU: "its \(Tensor.describe(shape)) tensor is empty", inPieces: false)
        }
        for shape in inputShapes + outputShapes {
            let image = try Tensor.nchwShape(shape)
            guard let limit = gpu.imageLimitExceeded(shape: image) else {
                if perElement, fromHost, ImagePieces.texels(ofImageShape: image) > ModelRun.pieceTexels {
                    return PlacementDecision(whyNotGPU: nil, inPieces: true)
                }
                continue
            }
            if perElement { return PlacementDecision(whyNotGPU: nil, inPieces: true) }
            let named = switch limit {
            case .arrayLayers: "maxImageArrayLayers (\(gpu.deviceInfo.maxImageArrayLayers) batch x slice layers)"
            case .dimension2D: "maxImageDimension2D (\(gpu.deviceInfo.maxImageDimension2D) texels a side)"
            }
            return PlacementDecision(whyNotGPU: "its \(Tensor.describe(shape)) tensor exceeds the device's \(named)",
                                     inPieces: false)
        }
        return PlacementDecision(whyNotGPU: nil, inPieces: false)
    }
}

/// A layer whose GPU form holds some of its cases only (a Pad on the
/// channel axis, a Resize of the batch axis, a binary op whose computed
/// operand has a lower rank): it says why not for a case, and the policy
/// runs that step on the CPU with the reason announced once, as every other.
protocol ShapeLimitedGPULayer: Layer {
    /// Why the GPU form cannot run these shapes; nil when it can.
    func whyNotGPU(inputShapes: [[Int]], outputShapes: [[Int]]) -> String?
}
