/// A `ModelGraph` made ready to run on a backend — the prepare phase, as
/// ncnn's `create_pipeline` and ExecuTorch's `prepare_pipelines`/`prepack`:
/// where each step runs, which slice image holds each value that lives on
/// the GPU, and, on the GPU, every layer prepared (pipelines created,
/// constants uploaded), every image made and every constant input uploaded,
/// so that a run only records, submits and waits.
///
/// Images are assigned by liveness, as ncnn's and Core ML's allocators do:
/// an image is taken when its value is first needed on the GPU and given
/// back after its last use (a CPU step that downloads it counts), so values
/// whose lifetimes do not overlap share one image (of the same shape).
/// Host tensors are planned the same way, in one `HostArena`: every value a
/// CPU step writes or a download lands in gets an offset, values whose host
/// lifetimes do not overlap share bytes, and a run reuses them (graph
/// outputs excepted: they go to the caller).
final class ModelPlan {
    let graph: ModelGraph
    /// Per step: where it runs (steps without work: `.cpu(reason: nil)`).
    let placements: [Placement]
    /// Per step: why it runs on the CPU although the GPU was allowed, if so.
    let cpuReasons: [String?]
    /// Per step: whether it runs on the GPU in pieces, its tensors being
    /// past the device's image limits (a `PerElementLayer` only).
    let inPieces: [Bool]
    /// Per value: the image slot it lives in on the GPU, nil if never there.
    let slots: [Int?]
    /// Per slot: its NCHW image shape.
    let slotShapes: [[Int]]
    /// Per value: the last step that reads it (see `ModelGraph.lastUses`).
    let lastUses: [Int]
    /// The slot images, made when the plan is.
    let images: [SliceImage]
    /// The host memory of the values CPU steps write and downloads land in
    /// (graph outputs excepted); nil when there are none, or under
    /// `.tensorPerRun`.
    let arena: HostArena?
    /// Whether each run first fills the arena with NaN (`.poisonedArena`).
    let poisonsArena: Bool
    /// The values whose data is known at prepare (constants, and the graph
    /// inputs given to `init`) that fp16 storage cannot keep, in value
    /// order; every step reading one runs on the CPU (`Backend.place`).
    let halfRangeFindings: [HalfRange.Finding]

    /// Where a plan keeps the host tensors of its intermediate values.
    enum HostMemory {
        /// In one arena planned by liveness and reused by every run.
        case arena
        /// In the arena, filled with NaN before each run (tests: a layer
        /// reading an output before writing it, or bytes shared too early,
        /// shows as NaN).
        case poisonedArena
        /// A new tensor per value per run, as before the arena (tests
        /// compare the two bit for bit).
        case tensorPerRun
    }

    /// The host memory of plans made on this task (tests set it).
    @TaskLocal static var hostMemory: HostMemory = .arena

    /// Places every step by the backend's one policy, assigns images, and
    /// prepares the GPU side on `backend.gpu`. `inputRanges`: per graph
    /// input, what fp16 storage would do to the data a run will give it
    /// (`HalfRange(checking:)`; nil, or no entry: it keeps it).
    /// `constantRange` checks a constant (a model's `ConvertedNodeCache`
    /// remembers its weights' findings, which every plan would check again).
    init(graph: ModelGraph, backend: Backend, inputRanges: [HalfRange?] = [],
         constantRange: (Tensor) -> HalfRange? = HalfRange.init(checking:)) throws {
        self.graph = graph
        lastUses = graph.lastUses()
        let findings = ModelPlan.halfRangeFindings(graph, inputRanges: inputRanges, constantRange: constantRange)
        halfRangeFindings = findings.map(\.finding)
        let unfaithful = Dictionary(uniqueKeysWithValues: findings.map { ($0.value, $0.finding) })
        var cpuReasons: [String?] = []
        var inPieces: [Bool] = []
        for step in graph.steps {
            let decision = try step.layer.map {
                try backend.place($0, inputShapes: step.inputs.map { graph.values[$0].shape },
                                  outputShapes: step.outputs.map { graph.values[$0].shape },
                                  fromHost: graph.isSingleLayer,
                                  unfaithfulInput: step.inputs.lazy.compactMap { unfaithful[$0] }.first
                                    .map { ($0.value, $0.range) })
            }
            cpuReasons.append(decision?.whyNotGPU)
            inPieces.append(decision?.inPieces ?? false)
        }
        self.cpuReasons = cpuReasons
        self.inPieces = inPieces
        placements = zip(graph.steps, cpuReasons).map { step, why in
            if step.layer == nil || backend.computeUnits == .cpuOnly { return .cpu(reason: nil) }
            return why.map { .cpu(reason: "\(step.label) runs on the CPU: \($0)") } ?? .gpu
        }
        (slots, slotShapes) = try ModelPlan.assignImages(graph, placements: placements, inPieces: inPieces)
        let memory = ModelPlan.hostMemory
        poisonsArena = memory == .poisonedArena
        if memory == .tensorPerRun {
            arena = nil
        } else {
            let lifetimes = ModelPlan.hostLifetimes(graph, placements: placements, inPieces: inPieces, lastUses: lastUses)
            let (offsets, bytes) = HostArena.offsets(for: lifetimes.values, sharing: lifetimes.inPlace,
                                                     valueCount: graph.values.count)
            arena = lifetimes.values.isEmpty ? nil
                : try HostArena(byteCount: bytes, offsets: offsets, shapes: graph.values.map(\.shape),
                                poisoned: poisonsArena)
        }
        guard let gpu = backend.gpu, placements.contains(where: \.isGPU) else {
            images = []
            return
        }
        images = try slotShapes.map { try gpu.makeSliceImage(shape: $0) }
        try prepare(on: gpu)
    }

    /// The constants, and the graph inputs `inputRanges` judges, that fp16
    /// storage cannot keep. Constants are checked on a backend without a
    /// GPU too (`layerkit inspect --backend cpu` warns of them), through
    /// `constantRange`, which may remember a model's weights across plans.
    private static func halfRangeFindings(_ graph: ModelGraph, inputRanges: [HalfRange?],
                                          constantRange: (Tensor) -> HalfRange?)
        -> [(value: Int, finding: HalfRange.Finding)] {
        // `inputRanges` judges the inputs held as float32 (typed ones are never stored in fp16).
        let inputs = Dictionary(zip(graph.inputs.filter { !graph.values[$0].isTyped }, inputRanges).compactMap { v, range in range.map { (v, $0) } },
                                uniquingKeysWith: { first, _ in first })
        return graph.values.indices.compactMap { v in
            let value = graph.values[v]
            if let range = inputs[v] { return (v, HalfRange.Finding(value: value.name, origin: .input, range: range)) }
            guard let constant = value.constant, let range = constantRange(constant) else { return nil }
            return (v, HalfRange.Finding(value: value.name, origin: .constant, range: range))
        }
    }

    /// The slot of each value that lives in an image, and each slot's shape.
    private static func assignImages(_ graph: ModelGraph, placements: [Placement],
                                     inPieces: [Bool]) throws -> (slots: [Int?], shapes: [[Int]]) {
        // The first and last step that needs each value's image. A step run
        // in pieces takes host tensors: its values need no image of their own.
        let count = graph.values.count
        var first = Array(repeating: Int.max, count: count)
        var last = Array(repeating: -1, count: count)
        var madeOnGPU = Array(repeating: false, count: count)
        for (i, step) in graph.steps.enumerated() where step.layer != nil {
            if placements[i].isGPU, !inPieces[i] {
                for v in step.inputs + step.outputs { first[v] = min(first[v], i); last[v] = max(last[v], i) }
                for v in step.outputs { madeOnGPU[v] = true }
            } else {
                for v in step.inputs where madeOnGPU[v] { last[v] = max(last[v], i) }
            }
        }
        for v in graph.outputs where madeOnGPU[v] { last[v] = Int.max }
        for v in 0..<count where graph.values[v].constant != nil { last[v] = Int.max }

        var slots = [Int?](repeating: nil, count: count)
        var shapes: [[Int]] = []
        // A constant is uploaded once, at prepare, before any step runs, and
        // read by every run: its image is its own for the plan's whole life.
        // Taking a slot freed by an earlier step would let that step's value
        // overwrite it during a run.
        for v in 0..<count where graph.values[v].constant != nil && first[v] != Int.max {
            slots[v] = shapes.count
            shapes.append(try Tensor.nchwShape(graph.values[v].shape))
        }
        var free: [[Int]: [Int]] = [:]
        for (i, step) in graph.steps.enumerated() {
            // Outputs are taken before anything is given back, so a step
            // never writes the image it reads.
            for v in step.inputs + step.outputs where first[v] == i && slots[v] == nil {
                let shape = try Tensor.nchwShape(graph.values[v].shape)
                if let slot = free[shape]?.popLast() {
                    slots[v] = slot
                } else {
                    slots[v] = shapes.count
                    shapes.append(shape)
                }
            }
            for v in Set(step.inputs + step.outputs) where last[v] == i {
                if let slot = slots[v] { free[shapes[slot], default: []].append(slot) }
            }
        }
        return (slots, shapes)
    }

    /// The host lifetime of every value the arena holds: written on the
    /// host by a CPU step (or a step run in pieces), or downloaded for one
    /// from the GPU, until its last read (`lastUses`, as `ModelRun` drops
    /// it). Graph inputs, constants and graph outputs are not the arena's.
    /// `inPlace`: (input, output) of CPU steps that may write their output
    /// over their input: a `PerElementLayer` (each element from the same
    /// element of its one input) whose input dies there and has the
    /// output's element count. Any other step's outputs never share bytes
    /// with its inputs, their lifetimes meeting at the step.
    static func hostLifetimes(_ graph: ModelGraph, placements: [Placement], inPieces: [Bool],
                                      lastUses: [Int]) -> (values: [HostArena.Lifetime], inPlace: [(Int, Int)]) {
        var excluded = Array(repeating: false, count: graph.values.count)
        for v in graph.inputs + graph.outputs { excluded[v] = true }
        // Constants are the plan's; typed values are `TypedTensor`s of their own (`ModelRun`).
        for v in graph.values.indices where graph.values[v].constant != nil || graph.values[v].isTyped { excluded[v] = true }
        var first = [Int?](repeating: nil, count: graph.values.count)
        var madeOnGPU = Array(repeating: false, count: graph.values.count)
        var inPlace: [(Int, Int)] = []
        for (i, step) in graph.steps.enumerated() where step.layer != nil {
            if placements[i].isGPU, !inPieces[i] {
                for v in step.outputs { madeOnGPU[v] = true }
                continue
            }
            for v in step.inputs where madeOnGPU[v] && first[v] == nil { first[v] = i }  // downloaded here
            for v in step.outputs { first[v] = i }
            if !inPieces[i], step.layer is PerElementLayer, step.inputs.count == 1, step.outputs.count == 1,
               let x = step.inputs.first, let y = step.outputs.first, !excluded[x], !excluded[y],
               lastUses[x] == i, graph.values[x].shape.reduce(1, *) == graph.values[y].shape.reduce(1, *) {
                inPlace.append((x, y))
            }
        }
        let values = graph.values.indices.compactMap { v -> HostArena.Lifetime? in
            guard !excluded[v], let start = first[v] else { return nil }
            return HostArena.Lifetime(value: v, first: start, last: max(start, lastUses[v]),
                                      bytes: graph.values[v].shape.reduce(1, *) * 4)
        }
        return (values, inPlace)
    }

    /// Prepares every GPU layer for its shapes and uploads the constants
    /// that live in images, in one submission.
    private func prepare(on gpu: GPUContext) throws {
        for (i, step) in graph.steps.enumerated() where placements[i].isGPU {
            try step.layer?.prepare(on: gpu, inputShapes: step.inputs.map { graph.values[$0].shape })
        }
        try gpu.stagingPool.reserve(lengths: crossings().map { images[$0].texelBytes })
        let constants = graph.values.indices.filter { graph.values[$0].constant != nil && slots[$0] != nil }
        guard !constants.isEmpty else { return }
        let commands = try gpu.makeCommandBuffer()
        for v in constants {
            if let tensor = graph.values[v].constant, let slot = slots[v] { try commands.upload(tensor, to: images[slot]) }
        }
        try commands.commit()
        try commands.waitUntilCompleted()
    }

    /// The slots of the values a run moves between host and GPU: graph
    /// inputs and CPU results that GPU steps read, GPU results that CPU steps
    /// or the caller read. Their staging buffers are reserved at prepare.
    private func crossings() -> [Int] {
        var onHost = Array(repeating: false, count: graph.values.count)
        for v in graph.inputs { onHost[v] = true }
        var slotsMoved: [Int] = []
        for (i, step) in graph.steps.enumerated() where step.layer != nil {
            let gpuStep = placements[i].isGPU && !inPieces[i]
            for v in step.inputs where graph.values[v].constant == nil {
                if let slot = slots[v], onHost[v] == gpuStep { slotsMoved.append(slot) }
            }
            for v in step.outputs { onHost[v] = !gpuStep }
        }
        for v in graph.outputs where !onHost[v] { if let slot = slots[v] { slotsMoved.append(slot) } }
        return slotsMoved
    }
}
