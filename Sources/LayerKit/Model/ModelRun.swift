import Foundation
import VulkanCompute

/// One run of a `ModelPlan`: walks the steps in order, keeping each value
/// where it was made. Consecutive GPU steps share one command buffer; a CPU
/// step that needs a value made on the GPU ends it (download, wait) and the
/// next GPU step uploads the CPU's results, as Core ML mixes CPU and GPU.
final class ModelRun {
    private let plan: ModelPlan
    private let gpu: GPUContext?
    private let profiling: Bool
    private var graph: ModelGraph { plan.graph }
    /// Per value: the host tensor, when it is current on the host.
    private var host: [Tensor?]
    /// Per value: whether its slot image holds it.
    private var onGPU: [Bool]
    private var commands: GPUCommandBuffer?
    private var downloads: [(value: Int, tensor: Tensor)] = []
    /// What each timestamp of the open command buffer ends: a span kind,
    /// name, op, shape and bytes (the first mark, "start", ends nothing).
    private var marks: [(kind: ModelProfile.Kind, name: String, op: String, shape: [Int], bytes: Int)] = []
    private var recordStart: Double = 0
    private let start = DispatchTime.now().uptimeNanoseconds
    private(set) var profile = ModelProfile()

    init(plan: ModelPlan, gpu: GPUContext?, inputs: [Tensor], profiling: Bool) {
        self.plan = plan
        self.gpu = gpu
        self.profiling = profiling
        host = plan.graph.values.map(\.constant)
        for (index, tensor) in zip(plan.graph.inputs, inputs) { host[index] = tensor }
        onGPU = plan.graph.values.map { $0.constant != nil && plan.constantsUploaded }
    }

    /// Runs every step; returns the graph's outputs.
    func run() throws -> [Tensor] {
        let lastUse = plan.lastUses
        for (i, step) in graph.steps.enumerated() {
            guard let layer = step.layer else { continue }
            if plan.placements[i].isGPU {
                try encode(step, layer)
            } else {
                try evaluate(step, layer)
            }
            // Host copies nothing reads any more are dropped now.
            for v in step.inputs where lastUse[v] == i && graph.values[v].constant == nil { host[v] = nil }
        }
        for v in graph.outputs where host[v] == nil { try download(v) }
        try finishGPUWork()
        if graph.steps.indices.contains(where: { plan.placements[$0].isGPU }) { plan.constantsUploaded = true }
        profile.wallNanoseconds = now()
        return try graph.outputs.map { v in
            guard let tensor = host[v] else { throw LayerKitError.unsupported("output '\(graph.values[v].name)' was not computed") }
            // Never hand back the caller's own input tensor as an output.
            return graph.inputs.contains(v) ? try tensor.reshaped(to: tensor.shape) : tensor
        }
    }

    // MARK: - GPU steps

    private func encode(_ step: ModelGraph.Step, _ layer: Layer) throws {
        guard let gpu else { throw LayerKitError.gpuUnavailable("no GPU for \(step.name)") }
        let images = try plan.slotImages(on: gpu)
        let commands = try openCommands(on: gpu)
        var uploaded = 0
        for v in step.inputs where !onGPU[v] {
            guard let tensor = host[v], let slot = plan.slots[v] else {
                throw LayerKitError.unsupported("\(step.name): input '\(graph.values[v].name)' is nowhere")
            }
            let shape = plan.slotShapes[slot]
            try commands.upload(tensor.shape == shape ? tensor : tensor.reshaped(to: shape), to: images[slot])
            onGPU[v] = true
            uploaded += images[slot].texelBytes
        }
        if uploaded > 0 { try mark(.upload, "\(step.name) inputs", "", graph.values[step.inputs[0]].shape, uploaded) }
        let inputs = step.inputs.map { images[plan.slots[$0]!] }
        let outputs = step.outputs.map { images[plan.slots[$0]!] }
        try layer.encode(commandBuffer: commands, inputs: inputs, outputs: outputs)
        for v in step.outputs {
            onGPU[v] = true
            host[v] = nil
        }
        try mark(.gpuLayer, step.name, step.opType, graph.values[step.outputs[0]].shape,
                 (inputs + outputs).reduce(0) { $0 + $1.texelBytes })
    }

    private func openCommands(on gpu: GPUContext) throws -> GPUCommandBuffer {
        if let commands { return commands }
        let made = try gpu.makeCommandBuffer()
        commands = made
        recordStart = now()
        if profiling { try made.timestamp("start") }
        return made
    }

    /// Ends the open span with a GPU timestamp (when profiling).
    private func mark(_ kind: ModelProfile.Kind, _ name: String, _ op: String, _ shape: [Int], _ bytes: Int) throws {
        guard profiling, let commands else { return }
        try commands.timestamp(name)
        marks.append((kind, name, op, shape, bytes))
        // A command buffer holds a bounded number of timestamps.
        if marks.count >= CommandBuffer.maxTimestamps - 2 { try finishGPUWork() }
    }

    /// Encodes a download of value `v` into a host tensor (filled at the wait).
    private func download(_ v: Int) throws {
        guard let gpu, let slot = plan.slots[v], onGPU[v] else {
            throw LayerKitError.unsupported("'\(graph.values[v].name)' is neither on the host nor on the GPU")
        }
        let commands = try openCommands(on: gpu)
        let tensor = try Tensor(shape: plan.slotShapes[slot])
        try commands.download(plan.images[slot], into: tensor)
        downloads.append((v, tensor))
        try mark(.download, graph.values[v].name, "", graph.values[v].shape, plan.images[slot].texelBytes)
    }

    /// Submits the open command buffer, waits, and lands its downloads.
    private func finishGPUWork() throws {
        guard let commands else { return }
        let submitStart = now()
        note(span(.record, "record", recordStart, submitStart))
        try commands.commit()
        let waitStart = now()
        note(span(.submit, "submit", submitStart, waitStart))
        try commands.waitUntilCompleted()
        note(span(.wait, "wait", waitStart, now()))
        self.commands = nil
        for (v, tensor) in downloads {
            let shape = graph.values[v].shape
            host[v] = tensor.shape == shape ? tensor : try tensor.reshaped(to: shape)
        }
        downloads.removeAll()
        if profiling {
            // GPU time placed on the host clock from the submission on.
            let stamps = try commands.timestamps()
            for (mark, (before, after)) in zip(marks, zip(stamps, stamps.dropFirst())) {
                profile.spans.append(ModelProfile.Span(
                    kind: mark.kind, name: mark.name, op: mark.op, startNanoseconds: submitStart + before.nanoseconds,
                    durationNanoseconds: after.nanoseconds - before.nanoseconds, shape: mark.shape, bytes: mark.bytes))
            }
            marks.removeAll()
        }
    }

    // MARK: - CPU steps

    private func evaluate(_ step: ModelGraph.Step, _ layer: Layer) throws {
        // GPU work before a CPU step is finished first: the step may need its
        // results, and the spans then never overlap.
        for v in step.inputs where host[v] == nil { try download(v) }
        try finishGPUWork()
        let inputs = try step.inputs.map { v in
            guard let tensor = host[v] else {
                throw LayerKitError.unsupported("\(step.name): input '\(graph.values[v].name)' is nowhere")
            }
            return tensor
        }
        let outputs = try step.outputs.map { try Tensor(shape: graph.values[$0].shape) }
        let begin = now()
        try layer.evaluate(inputs: inputs, outputs: outputs)
        if profiling {
            let bytes = 4 * (inputs + outputs).reduce(0) { $0 + $1.count }
            profile.spans.append(ModelProfile.Span(kind: .cpuLayer, name: step.name, op: step.opType,
                                                   startNanoseconds: begin, durationNanoseconds: now() - begin,
                                                   shape: outputs[0].shape, bytes: bytes))
        }
        for (v, tensor) in zip(step.outputs, outputs) {
            host[v] = tensor
            onGPU[v] = false
        }
    }

    /// Keeps `span` when profiling.
    private func note(_ span: ModelProfile.Span) {
        if profiling { profile.spans.append(span) }
    }

    private func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) }

    private func span(_ kind: ModelProfile.Kind, _ name: String, _ from: Double, _ to: Double) -> ModelProfile.Span {
        ModelProfile.Span(kind: kind, name: name, op: "", startNanoseconds: from, durationNanoseconds: to - from,
                          shape: [], bytes: 0)
    }
}
