import Foundation

/// One run of a `ModelPlan` — LayerKit's one executor, for models and single
/// layers alike: walks the steps in order, keeping each value where it was
/// made. Consecutive GPU steps share one command buffer; a CPU step first
/// finishes the GPU's work (downloading what it reads) and the next GPU step
/// uploads the CPU's results, as Core ML mixes CPU and GPU. Tensors cross
/// between host and GPU as they are (`Tensor.nchwShape` maps any rank onto
/// an image), never through reshaped copies.
///
/// With a `Profiler`, every layer is an op of its own (its step's label):
/// its kernels, transfers, recording and CPU evaluation are recorded under it.
final class ModelRun {
    private let plan: ModelPlan
    private let gpu: GPUContext?
    private let profiler: Profiler?
    /// Whether command buffers carry the `start`/`upload`/`kernel`/`download` marks.
    private let marksTimestamps: Bool
    private var graph: ModelGraph { plan.graph }
    /// Per value: the host tensor, when it is current on the host.
    private var host: [Tensor?]
    /// Per typed value (`ModelGraph.Value.isTyped`): its value, once made.
    private var typed: [TypedTensor?]
    /// The typed graph outputs of the last `run()`, by position in the
    /// graph's outputs: their exact values (`run()` returns them as float32).
    private(set) var typedOutputs: [Int: TypedTensor] = [:]
    /// Per value: whether its slot image holds it.
    private var onGPU: [Bool]
    private var commands: GPUCommandBuffer?
    /// Layers encoded into `commands`.
    private var encodedSteps = 0
    private var downloads: [(value: Int, tensor: Tensor)] = []
    /// The marks of every command buffer the run submitted, in order.
    private(set) var timestamps: [GPUTimestamp] = []

    /// With a profiler, a command buffer takes at most this many layers, so
    /// that each of their transfers and kernels gets its GPU timestamps.
    static let profiledStepsPerCommandBuffer = 32

    /// The most texels of one piece of a step run in pieces: 8 MiB of fp16
    /// a slice image, 16 MiB of Float32 for the piece on the host. With the
    /// piece's two images and two staging buffers, a streamed run needs
    /// about 48 MiB beyond its tensors (measured in RELIABILITY.md).
    static let pieceTexels = 1 << 20

    /// Per value: the caller's tensor to write it into (graph outputs only).
    private var given: [Int: Tensor] = [:]

    /// Called with each value a CPU step computes, as soon as it is
    /// computed (its host tensor may be reused once nothing reads it):
    /// how `Model` checks a CPU reference's values against fp16's range.
    var observeComputed: ((Int, Tensor) -> Void)?

    /// `inputs` are the values of the graph inputs held as float32, in
    /// order, and `typedInputs` those of the typed ones (`isTyped`), in
    /// order. `outputs`, when given, receive the graph's outputs (of their
    /// shapes; nil for an output that gets a new tensor) instead of new tensors.
    init(plan: ModelPlan, gpu: GPUContext?, inputs: [Tensor], typedInputs: [TypedTensor] = [], outputs: [Tensor?] = [],
         profiler: Profiler?, marksTimestamps: Bool = false) {
        self.plan = plan
        self.gpu = gpu
        self.profiler = profiler
        self.marksTimestamps = marksTimestamps
        for (index, tensor) in zip(plan.graph.outputs, outputs) { given[index] = tensor }
        if plan.poisonsArena { plan.arena?.poison() }
        host = plan.graph.values.map(\.constant)
        typed = Array(repeating: nil, count: plan.graph.values.count)
        let graph = plan.graph
        for (index, tensor) in zip(graph.inputs.filter { !graph.values[$0].isTyped }, inputs) { host[index] = tensor }
        for (index, value) in zip(graph.inputs.filter { graph.values[$0].isTyped }, typedInputs) { typed[index] = value }
        // The plan uploaded every constant that lives in an image.
        onGPU = plan.graph.values.indices.map { plan.graph.values[$0].constant != nil && plan.slots[$0] != nil }
    }

    /// Runs every step; returns the graph's outputs.
    func run() throws -> [Tensor] {
        // Steps are read in place, by index: a copy of each (names, arrays,
        // layer) cost a dozen reference counts a step, a few percent of a
        // small model's run.
        for i in graph.steps.indices {
            guard let layer = graph.steps[i].layer else { continue }
            try run(graph.steps[i], layer, index: i)
        }
        for v in graph.outputs where host[v] == nil && typed[v] == nil { try download(v) }
        try finishGPUWork()
        typedOutputs = [:]
        for (k, v) in graph.outputs.enumerated() {
            guard let value = typed[v] else { continue }
            typedOutputs[k] = value
            host[v] = try given[v].map { try value.write(into: $0); return $0 } ?? value.float32Tensor()
        }
        return try graph.outputs.map { v in
            guard let tensor = host[v] else { throw LayerKitError.unsupported("output '\(graph.values[v].name)' was not computed") }
            // Never hand back the caller's own input tensor, or the plan's
            // constant (an output folded at load), as an output: the
            // caller's output tensor gets a copy, or a new one does.
            if let target = given[v] {
                if target !== tensor { target.dataPointer.update(from: tensor.dataPointer, count: tensor.count) }
                return target
            }
            return graph.inputs.contains(v) || graph.values[v].constant != nil ? try tensor.reshaped(to: tensor.shape) : tensor
        }
    }

    private func run(_ step: ModelGraph.Step, _ layer: Layer, index i: Int) throws {
        // The label only for the profiler: building it costs more than a small layer.
        let label = profiler == nil ? "" : step.label
        try profiler.withOp(label) {
            if let typedStep = layer as? TypedStep {
                return try compute(step, typedStep, label)
            }
            // A float layer reads a typed value (float64) as float32.
            for v in step.inputs where host[v] == nil && !onGPU[v] {
                if let value = typed[v] { host[v] = try value.float32Tensor() }
            }
            if plan.inPieces[i], let perElement = layer as? PerElementLayer {
                try runInPieces(step, perElement)
            } else if plan.placements[i].isGPU {
                try recording { try encode(step, layer) }
            } else {
                try evaluate(step, layer, label)
            }
        }
        // Host copies nothing reads any more are dropped now.
        for v in step.inputs where plan.lastUses[v] == i && graph.values[v].constant == nil {
            host[v] = nil
            typed[v] = nil
        }
    }

    // MARK: - GPU steps

    private func encode(_ step: ModelGraph.Step, _ layer: Layer) throws {
        let commands = try openCommands()
        for v in step.inputs where !onGPU[v] {
            guard let tensor = host[v], let slot = plan.slots[v] else {
                throw LayerKitError.unsupported("\(step.name): input '\(graph.values[v].name)' is nowhere")
            }
            try commands.upload(tensor, to: plan.images[slot])
            onGPU[v] = true
        }
        try mark("upload")
        let image = { (v: Int) throws -> SliceImage in
            guard let slot = self.plan.slots[v] else {
                throw LayerKitError.unsupported("\(step.name): '\(self.graph.values[v].name)' has no image")
            }
            return self.plan.images[slot]
        }
        try layer.encode(commandBuffer: commands, inputs: step.inputs.map(image), outputs: step.outputs.map(image))
        try mark("kernel")
        for v in step.outputs {
            onGPU[v] = true
            host[v] = nil
        }
        encodedSteps += 1
        if profiler != nil, encodedSteps >= ModelRun.profiledStepsPerCommandBuffer { try finishGPUWork() }
    }

    /// Runs a per-element step in pieces, streamed: each input is cut into
    /// pieces within the device's image limits and `pieceTexels`
    /// (`ImagePieces`), and each piece is uploaded, encoded with its
    /// channels' values, downloaded and pasted into the output before the
    /// next, so the images and staging buffers in use at once stay the size
    /// of a piece whatever the tensor's size.
    private func runInPieces(_ step: ModelGraph.Step, _ layer: PerElementLayer) throws {
        guard let gpu else { throw LayerKitError.gpuUnavailable("no GPU for \(step.name)") }
        let inputs = try hostInputs(of: step)
        let outputs = try step.outputs.map(hostTensor)
        for (input, output) in zip(inputs, outputs) {
            let s = try input.nchw()
            let pieces = ImagePieces(n: s.n, c: s.c, h: s.h, w: s.w,
                                     maxDimension: Int(gpu.deviceInfo.maxImageDimension2D),
                                     maxLayers: Int(gpu.deviceInfo.maxImageArrayLayers), maxTexels: ModelRun.pieceTexels)
            for piece in pieces.pieces {
                // The piece's input, then (once downloaded) its result.
                let part = try input.copy(piece)
                let commands = try openCommands()
                try recording {
                    let inputImage = try gpu.makeSliceImage(like: part)
                    let outputImage = try gpu.makeSliceImage(like: part)
                    try commands.upload(part, to: inputImage)  // reads `part` now
                    try mark("upload")
                    try layer.encode(commandBuffer: commands, inputs: [inputImage], outputs: [outputImage],
                                     channels: piece.channels, of: s.c)
                    try mark("kernel")
                    try commands.download(outputImage, into: part)
                }
                try finishGPUWork()
                try output.paste(part, at: piece)
            }
        }
        for (v, tensor) in zip(step.outputs, outputs) {
            host[v] = tensor
            onGPU[v] = false
        }
    }

    /// `body`, as a `record` span when profiled.
    private func recording(_ body: () throws -> Void) throws {
        if let profiler { try profiler.measure(.record, "record commands", body) } else { try body() }
    }

    private func openCommands() throws -> GPUCommandBuffer {
        if let commands { return commands }
        guard let gpu else { throw LayerKitError.gpuUnavailable("a GPU step without a GPU") }
        let made = try gpu.makeCommandBuffer(profiler: profiler)
        commands = made
        try mark("start")
        return made
    }

    /// A GPU timestamp after the work recorded so far, when the run marks them.
    private func mark(_ label: String) throws {
        if marksTimestamps { try commands?.timestamp(label) }
    }

    /// Encodes a download of value `v` into a host tensor of its own shape
    /// (filled at the wait).
    private func download(_ v: Int) throws {
        guard let slot = plan.slots[v], onGPU[v] else {
            throw LayerKitError.unsupported("'\(graph.values[v].name)' is neither on the host nor on the GPU")
        }
        let tensor = try hostTensor(for: v)
        try openCommands().download(plan.images[slot], into: tensor)
        downloads.append((v, tensor))
    }

    /// Submits the open command buffer, waits, and lands its downloads.
    private func finishGPUWork() throws {
        guard let commands else { return }
        try mark("download")
        try commands.commit()
        try commands.waitUntilCompleted()
        timestamps += try commands.timestamps()
        self.commands = nil
        encodedSteps = 0
        for (v, tensor) in downloads { host[v] = tensor }
        downloads.removeAll()
    }

    // MARK: - CPU steps

    /// The host tensors of `step`'s inputs, downloading (and finishing the
    /// GPU's work) first where they are only on the GPU.
    private func hostInputs(of step: ModelGraph.Step) throws -> [Tensor] {
        // GPU work before a host step is finished first: the step may need its
        // results, and the GPU and CPU spans then never overlap.
        for v in step.inputs where host[v] == nil { try download(v) }
        try finishGPUWork()
        return try step.inputs.map { v in
            guard let tensor = host[v] else {
                throw LayerKitError.unsupported("\(step.name): input '\(graph.values[v].name)' is nowhere")
            }
            return tensor
        }
    }

    /// The tensor value `v` lands in on the host: the caller's (graph
    /// outputs), the plan's arena view (intermediate values), or a new one
    /// (graph outputs the caller gave no tensor for; every value without
    /// an arena).
    private func hostTensor(for v: Int) throws -> Tensor {
        if let tensor = given[v] ?? plan.arena?.views[v] { return tensor }
        return try Tensor(shape: graph.values[v].shape)
    }

    /// Runs a typed step on the CPU: its float inputs read as float32
    /// values, its outputs kept typed or, for float ones, written to their
    /// host tensors.
    private func compute(_ step: ModelGraph.Step, _ layer: TypedStep, _ label: String) throws {
        for v in step.inputs where typed[v] == nil && host[v] == nil { try download(v) }
        try finishGPUWork()
        let inputs = try step.inputs.map { v -> TypedTensor in
            if let value = typed[v] { return value }
            guard let tensor = host[v] else {
                throw LayerKitError.unsupported("\(step.name): input '\(graph.values[v].name)' is nowhere")
            }
            return TypedTensor(tensor)
        }
        let outputs = try profiler.map { profiler in
            try profiler.measure(.cpuLayer, label, shape: step.outputs.first.map { graph.values[$0].shape }) {
                try layer.run(inputs)
            }
        } ?? layer.run(inputs)
        for (v, value) in zip(step.outputs, outputs) {
            if graph.values[v].isTyped {
                typed[v] = value
                continue
            }
            let tensor = try hostTensor(for: v)
            try value.write(into: tensor)
            host[v] = tensor
            onGPU[v] = false
            observeComputed?(v, tensor)
        }
    }

    private func evaluate(_ step: ModelGraph.Step, _ layer: Layer, _ label: String) throws {
        let inputs = try hostInputs(of: step)
        let outputs = try step.outputs.map(hostTensor)
        try profiler.evaluate(layer, inputs: inputs, outputs: outputs, name: label)
        for (v, tensor) in zip(step.outputs, outputs) {
            host[v] = tensor
            onGPU[v] = false
            observeComputed?(v, tensor)
        }
    }
}
