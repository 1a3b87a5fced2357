import Foundation

/// One run of a `ModelPlan`: walks the steps in order, keeping each value
/// where it was made. Consecutive GPU steps share one command buffer; a CPU
/// step first finishes the GPU's work (downloading what it reads) and the
/// next GPU step uploads the CPU's results, as Core ML mixes CPU and GPU.
///
/// With a `Profiler`, every layer is an op of its own (`name (OpType)`):
/// its kernels, transfers and CPU evaluation are recorded under it.
final class ModelRun {
    private let plan: ModelPlan
    private let gpu: GPUContext?
    private let profiler: Profiler?
    private var graph: ModelGraph { plan.graph }
    /// Per value: the host tensor, when it is current on the host.
    private var host: [Tensor?]
    /// Per value: whether its slot image holds it.
    private var onGPU: [Bool]
    private var commands: GPUCommandBuffer?
    /// Layers encoded into `commands`.
    private var encodedSteps = 0
    private var downloads: [(value: Int, tensor: Tensor)] = []

    /// With a profiler, a command buffer takes at most this many layers, so
    /// that each of their transfers and kernels gets its GPU timestamps.
    static let profiledStepsPerCommandBuffer = 32

    init(plan: ModelPlan, gpu: GPUContext?, inputs: [Tensor], profiler: Profiler?) {
        self.plan = plan
        self.gpu = gpu
        self.profiler = profiler
        host = plan.graph.values.map(\.constant)
        for (index, tensor) in zip(plan.graph.inputs, inputs) { host[index] = tensor }
        onGPU = plan.graph.values.map { $0.constant != nil && plan.constantsUploaded }
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
        for v in graph.outputs where host[v] == nil { try download(v) }
        try finishGPUWork()
        if plan.placements.contains(where: \.isGPU) { plan.constantsUploaded = true }
        return try graph.outputs.map { v in
            guard let tensor = host[v] else { throw LayerKitError.unsupported("output '\(graph.values[v].name)' was not computed") }
            // Never hand back the caller's own input tensor as an output.
            return graph.inputs.contains(v) ? try tensor.reshaped(to: tensor.shape) : tensor
        }
    }

    private func run(_ step: ModelGraph.Step, _ layer: Layer, index i: Int) throws {
        // The label only for the profiler: building it costs more than a small layer.
        let label = profiler == nil ? "" : "\(step.name) (\(step.domain.isEmpty ? "" : step.domain + ".")\(step.opType))"
        try profiler.withOp(label) {
            if plan.placements[i].isGPU {
                try encode(step, layer)
            } else {
                try evaluate(step, layer, label)
            }
        }
        // Host copies nothing reads any more are dropped now.
        for v in step.inputs where plan.lastUses[v] == i && graph.values[v].constant == nil { host[v] = nil }
    }

    // MARK: - GPU steps

    private func encode(_ step: ModelGraph.Step, _ layer: Layer) throws {
        guard let gpu else { throw LayerKitError.gpuUnavailable("no GPU for \(step.name)") }
        let images = try plan.slotImages(on: gpu)
        let commands = try openCommands(on: gpu)
        for v in step.inputs where !onGPU[v] {
            guard let tensor = host[v], let slot = plan.slots[v] else {
                throw LayerKitError.unsupported("\(step.name): input '\(graph.values[v].name)' is nowhere")
            }
            let shape = plan.slotShapes[slot]
            try commands.upload(tensor.shape == shape ? tensor : tensor.reshaped(to: shape), to: images[slot])
            onGPU[v] = true
        }
        let image = { (v: Int) throws -> SliceImage in
            guard let slot = self.plan.slots[v] else {
                throw LayerKitError.unsupported("\(step.name): '\(self.graph.values[v].name)' has no image")
            }
            return images[slot]
        }
        try layer.encode(commandBuffer: commands, inputs: step.inputs.map(image), outputs: step.outputs.map(image))
        for v in step.outputs {
            onGPU[v] = true
            host[v] = nil
        }
        encodedSteps += 1
        if profiler != nil, encodedSteps >= ModelRun.profiledStepsPerCommandBuffer { try finishGPUWork() }
    }

    private func openCommands(on gpu: GPUContext) throws -> GPUCommandBuffer {
        if let commands { return commands }
        let made = try gpu.makeCommandBuffer(profiler: profiler)
        commands = made
        return made
    }

    /// Encodes a download of value `v` into a host tensor (filled at the wait).
    private func download(_ v: Int) throws {
        guard let gpu, let slot = plan.slots[v], onGPU[v] else {
            throw LayerKitError.unsupported("'\(graph.values[v].name)' is neither on the host nor on the GPU")
        }
        let tensor = try Tensor(shape: plan.slotShapes[slot])
        try openCommands(on: gpu).download(plan.images[slot], into: tensor)
        downloads.append((v, tensor))
    }

    /// Submits the open command buffer, waits, and lands its downloads.
    private func finishGPUWork() throws {
        guard let commands else { return }
        try commands.commit()
        try commands.waitUntilCompleted()
        self.commands = nil
        encodedSteps = 0
        for (v, tensor) in downloads {
            let shape = graph.values[v].shape
            host[v] = tensor.shape == shape ? tensor : try tensor.reshaped(to: shape)
        }
        downloads.removeAll()
    }

    // MARK: - CPU steps

    private func evaluate(_ step: ModelGraph.Step, _ layer: Layer, _ label: String) throws {
        // GPU work before a CPU step is finished first: the step may need its
        // results, and the GPU and CPU spans then never overlap.
        for v in step.inputs where host[v] == nil { try download(v) }
        try finishGPUWork()
        let inputs = try step.inputs.map { v in
            guard let tensor = host[v] else {
                throw LayerKitError.unsupported("\(step.name): input '\(graph.values[v].name)' is nowhere")
            }
            return tensor
        }
        let outputs = try step.outputs.map { try Tensor(shape: graph.values[$0].shape) }
        try profiler.evaluate(layer, inputs: inputs, outputs: outputs, name: label)
        for (v, tensor) in zip(step.outputs, outputs) {
            host[v] = tensor
            onGPU[v] = false
        }
    }
}
