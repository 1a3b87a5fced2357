import Foundation

/// The four Float32 storage buffers of `optimizer.comp` (parameters,
/// gradients, first and second moments), host-visible, kept by an
/// `Optimizer` from step to step while the parameter count stays the same:
/// the moments stay in theirs between steps.
struct OptimizerBuffers {
    let count: Int
    let parameters, gradients, first, second: GPUBuffer

    init(count: Int, on context: GPUContext) throws {
        self.count = count
        // Not from the context's pool: made at the end of the first step, they would take the buffers
        // that step's layers gave back, and the next step's layers would allocate again.
        let make = { try context.makeBuffer(floats: [Float](repeating: 0, count: count), pooled: false) }
        (parameters, gradients, first, second) = (try make(), try make(), try make(), try make())
    }

    /// The mapped floats of `buffer`.
    static func floats(_ buffer: GPUBuffer) throws -> UnsafeMutableBufferPointer<Float> {
        guard let contents = buffer.buffer.contents else {
            throw LayerKitError.unsupported("optimizer buffer memory is not mapped")
        }
        return UnsafeMutableBufferPointer(start: contents.bindMemory(to: Float.self, capacity: buffer.floatCount),
                                          count: buffer.floatCount)
    }
}

extension Optimizer {
    /// Runs the step's `constants` (one per parameter) with `optimizer.comp`
    /// on `context`: `packed` is copied into the buffers (its moments only
    /// when not `momentsOnDevice`, its parameters only when not
    /// `parametersOnDevice`, the buffers holding them from the last step),
    /// updated there in one submission, and its parameters copied back; the
    /// moments are copied back too when they were copied in (the first
    /// step, or one after `importState`), so that `states` has them.
    func runOnGPU(_ context: GPUContext, _ constants: [OptimizerConstants], _ packed: inout PackedStep,
                  momentsOnDevice: Bool, parametersOnDevice: Bool) throws {
        let count = packed.parameters.count
        guard count > 0 else { return }
        let buffers = try gpuBuffers(count: count, on: context)
        var copiedIn = [(buffers.gradients, packed.gradients)]
        if !parametersOnDevice { copiedIn.append((buffers.parameters, packed.parameters)) }
        if !momentsOnDevice { copiedIn += [(buffers.first, packed.first), (buffers.second, packed.second)] }
        for (buffer, values) in copiedIn {
            let floats = try OptimizerBuffers.floats(buffer)
            _ = floats.update(fromContentsOf: values)
        }
        let kernel = try BuiltInShaders.optimizer.kernel(on: context)
        let commands = try context.makeCommandBuffer()
        for c in constants where c.count > 0 {
            try commands.dispatch(kernel, images: [], buffers: [buffers.parameters, buffers.gradients, buffers.first,
                                                                buffers.second], constants: c, threads: c.threads)
        }
        try commands.commit()
        try commands.waitUntilCompleted()
        // The buffers are mapped: the copies in and out are this step's transfers.
        context.counters.upload(bytes: copiedIn.count * count * 4)
        context.counters.download(bytes: (momentsOnDevice ? 1 : 3) * count * 4)
        packed.parameters = Array(try OptimizerBuffers.floats(buffers.parameters).prefix(count))
        guard !momentsOnDevice else { return }
        packed.first = Array(try OptimizerBuffers.floats(buffers.first).prefix(count))
        packed.second = Array(try OptimizerBuffers.floats(buffers.second).prefix(count))
    }

    /// Copies the moments the GPU's buffers hold (`stateOnDevice`) into
    /// `states`, counted as a download; the buffers keep them for the next step.
    func readMomentsBack() {
        guard let layout = stateOnDevice, let buffers, let context = gpu else { return }
        // The buffers were mapped when the step that left the moments there read them.
        guard let first = try? OptimizerBuffers.floats(buffers.first),
              let second = try? OptimizerBuffers.floats(buffers.second) else { return }
        var read = 0
        for (name, offset) in zip(layout.names, layout.offsets) {
            guard var state = states[name] else { continue }
            let range = offset..<offset + state.shape.reduce(1, *)
            if state.first != nil { state.first = Array(first[range]); read += range.count }
            if state.second != nil { state.second = Array(second[range]); read += range.count }
            states[name] = state
        }
        context.counters.download(bytes: read * 4)
    }

    /// The parameters as the last step left them in the GPU's buffer, with
    /// each one's offset there: what `TrainingPass` re-derives its layers'
    /// GPU weight forms from. Nil when the last step ran on the CPU, or
    /// none ran since `importState`.
    var deviceParameters: DeviceParameters? {
        guard parametersOnDevice != nil, let layout = stateOnDevice, let buffers, let gpu else { return nil }
        return DeviceParameters(buffer: buffers.parameters, context: gpu,
                                offsets: Dictionary(uniqueKeysWithValues: zip(layout.names, layout.offsets)))
    }

    /// The kept buffers when they hold `count` floats, else new ones.
    private func gpuBuffers(count: Int, on context: GPUContext) throws -> OptimizerBuffers {
        if let buffers, buffers.count == count { return buffers }
        let made = try OptimizerBuffers(count: count, on: context)
        buffers = made
        return made
    }
}
