import Foundation

/// Which processors layers may run on.
public enum ComputeUnits: String, Sendable, CaseIterable {
    /// The CPU evaluator only.
    case cpuOnly
    /// The GPU for every layer that has `encode`, on whichever Vulkan device
    /// was chosen, a CPU-emulated one (lavapipe) included. Required: a
    /// backend or model asking for it throws when no device can be opened.
    case gpu
    /// LayerKit decides: the GPU on real GPU hardware; on a CPU-type Vulkan
    /// device, or with no device at all, the CPU evaluator (it says why).
    case automatic
}

/// Where a layer runs, and why when it is not where it could have been.
public enum Placement: Sendable, Hashable {
    case cpu(reason: String?)
    case gpu

    public var isGPU: Bool { self == .gpu }
}

/// The result of running one layer.
public struct LayerRun: Sendable {
    /// One tensor per layer output.
    public let outputs: [Tensor]
    /// Where it ran.
    public let placement: Placement
    /// GPU timestamps (`start`, `upload`, `kernel`, `download` marks), empty
    /// on the CPU or when the backend's `timestamps` is off.
    public let gpuTimestamps: [GPUTimestamp]
}

/// Runs layers on the GPU or the CPU according to `ComputeUnits`, the
/// device, and what each layer implements, like Core ML's dispatcher.
///
/// Every fallback to the CPU is announced once (one line through `notice`,
/// by default `Backend.standardErrorNotice`: `layerkit: ` and the line on
/// standard error), never silent unless a caller asks for it with a
/// `notice` of `{ _ in }`. Thread-safe: a backend may be shared by threads.
public final class Backend: @unchecked Sendable {
    public let computeUnits: ComputeUnits
    /// The GPU, when one could be opened and `computeUnits` allows it.
    public let gpu: GPUContext?
    /// Why there is no GPU, when `computeUnits` wanted one.
    public let gpuUnavailableReason: String?
    /// Whether GPU runs record their `start`/`upload`/`kernel`/`download`
    /// timestamps (`LayerRun.gpuTimestamps`); off, a run records none.
    public let timestamps: Bool
    /// The threads the CPU evaluator uses in this backend's runs (every
    /// CPU layer of a model and single-layer runs); nil: one per processor
    /// the process may use.
    public let threads: Int?
    private let notice: @Sendable (String) -> Void
    private let lock = NSLock()
    private var announced: Set<String> = []

    /// Opens the GPU unless `computeUnits` is `.cpuOnly`. With `.automatic`
    /// a missing device is not an error: the backend runs on the CPU and says
    /// so; with `.gpu` it throws `LayerKitError.gpuUnavailable`.
    /// Pass `context` to share an open device.
    /// `timestamps` false leaves GPU runs without timestamps. `threads`
    /// sets the CPU evaluator's thread count (nil: the cores the process may
    /// use); it throws `LayerKitError.invalidParameter` below 1.
    /// `notice` receives each placement notice, once per distinct line
    /// (default: `standardErrorNotice`; `{ _ in }` silences them).
    public init(computeUnits: ComputeUnits = .automatic, context: GPUContext? = nil, validation: Bool? = nil,
                timestamps: Bool = true, threads: Int? = nil,
                notice: @escaping @Sendable (String) -> Void = Backend.standardErrorNotice) throws {
        if let threads, threads < 1 {
            throw LayerKitError.invalidParameter("threads must be at least 1, got \(threads)")
        }
        self.threads = threads
        self.computeUnits = computeUnits
        self.timestamps = timestamps
        self.notice = notice
        if computeUnits == .cpuOnly {
            gpu = nil
            gpuUnavailableReason = nil
        } else if let context {
            gpu = context
            gpuUnavailableReason = nil
        } else {
            do {
                gpu = try GPUContext(validation: validation)
                gpuUnavailableReason = nil
            } catch {
                if computeUnits == .gpu { throw LayerKitError.gpuUnavailable("no usable Vulkan device: \(error)") }
                gpu = nil
                gpuUnavailableReason = "no usable Vulkan device (\(error))"
            }
        }
    }

    /// The default `notice` of `Backend` and `Model`: writes `layerkit: `
    /// and the message, as one line (line breaks become spaces), to
    /// standard error.
    public static let standardErrorNotice: @Sendable (String) -> Void = { message in
        FileHandle.standardError.write(Data(noticeLine(message).utf8))
    }

    /// `message` as the line `standardErrorNotice` writes, with its newline.
    static func noticeLine(_ message: String) -> String {
        let flat = message.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).joined(separator: " ")
        return "layerkit: \(flat)\n"
    }

    /// Where `layer` will run, with the reason when it is the CPU although a
    /// GPU was allowed.
    public func placement(for layer: Layer) -> Placement {
        guard computeUnits != .cpuOnly else { return .cpu(reason: nil) }
        guard let why = whyNotGPU(layer) else { return .gpu }
        return .cpu(reason: "\(layer.layerName) runs on the CPU: \(why)")
    }

    /// Runs `layer` on `inputs` as a plan of one step, by the executor that
    /// runs models: outputs are allocated from `outputShapes`, or are
    /// `outputs` when given (of those shapes; a `PerElementLayer` may be
    /// given its own inputs, to run in place and need no second tensor). On
    /// the GPU, a `PerElementLayer` past the device's image limits or over
    /// `ModelRun.pieceTexels` runs streamed in pieces, and any other layer
    /// past the limits runs on the CPU and says why, as does a layer given
    /// an input fp16 storage cannot keep (`HalfRange`). With a `profiler`, the
    /// run's steps are recorded there: the CPU evaluation, or every upload,
    /// dispatch, download, recording, submit and wait (see `Profiler`).
    public func run(_ layer: Layer, inputs: [Tensor], outputs: [Tensor]? = nil,
                    profiler: Profiler? = nil) throws -> LayerRun {
        let graph = try ModelGraph(layer: layer, inputShapes: inputs.map(\.shape))
        if let outputs {
            let shapes = graph.outputs.map { graph.values[$0].shape }
            guard outputs.map(\.shape) == shapes else {
                throw LayerKitError.shapeMismatch("\(layer.layerName): outputs of shapes "
                    + outputs.map { Tensor.describe($0.shape) }.joined(separator: ", ") + " for results of shapes "
                    + shapes.map(Tensor.describe).joined(separator: ", "))
            }
            let inPlace = outputs.contains { output in inputs.contains { $0 === output } }
            guard !inPlace || layer is PerElementLayer else {
                throw LayerKitError.invalidParameter(
                    "\(layer.layerName) is not per-element: its outputs cannot be its inputs")
            }
        }
        let plan = try ModelPlan(graph: graph, backend: self, inputRanges: halfRanges(of: inputs))
        announce(plan)
        let run = ModelRun(plan: plan, gpu: gpu, inputs: inputs, outputs: outputs ?? [], profiler: profiler,
                           marksTimestamps: timestamps)
        let outputs = try CPUThreads.with(threads) { try run.run() }
        return LayerRun(outputs: outputs, placement: plan.placements[0], gpuTimestamps: run.timestamps)
    }

    /// What fp16 storage would do to each of `inputs` (nil: it keeps it),
    /// for the placement policy; empty without a GPU, where nothing is
    /// stored in fp16 and the pass would be wasted.
    func halfRanges(of inputs: [Tensor]) -> [HalfRange?] {
        guard computeUnits != .cpuOnly, gpu != nil else { return [] }
        return inputs.map(HalfRange.init(checking:))
    }

    /// Announces once, per reason, the steps of `plan` that could have used
    /// the GPU but run on the CPU: one line for a whole model on an emulated
    /// device, not one per layer. `model` names a model's plan in the line.
    func announce(_ plan: ModelPlan, model: String? = nil) {
        var groups: [(why: String, steps: [ModelGraph.Step])] = []
        for (step, reason) in zip(plan.graph.steps, plan.cpuReasons) {
            guard let why = reason else { continue }
            if let i = groups.firstIndex(where: { $0.why == why }) {
                groups[i].steps.append(step)
            } else {
                groups.append((why, [step]))
            }
        }
        let layers = plan.graph.steps.filter { $0.layer != nil }.count
        for (why, steps) in groups {
            guard let model else {
                steps.forEach { announceCPU($0.label, why: why) }
                continue
            }
            let names = steps.map(\.name)
            let which = names.count == layers ? "all \(layers) layers run" : names.count == 1
                ? "layer \(names[0]) runs" : "\(names.count) of \(layers) layers (\(names.prefix(3).joined(separator: ", "))"
                    + (names.count > 3 ? ", ..." : "") + ") run"
            announce("\(model): \(which) on the CPU: \(why)")
        }
    }

    /// Sends `message` through `notice` once per backend (a model's
    /// conversion notices: DOUBLE inputs computed in float32).
    func announce(_ message: String) {
        lock.lock()
        let isNew = announced.insert(message).inserted
        lock.unlock()
        if isNew { notice(message) }
    }
}
