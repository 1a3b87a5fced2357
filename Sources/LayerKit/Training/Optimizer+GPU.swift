import Foundation

/// The four Float32 storage buffers of `optimizer.comp` (parameters,
/// gradients, first and second moments), host-visible, kept by an
/// `Optimizer` from step to step while the parameter count stays the same.
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
    /// on `context`: `packed` is copied into the buffers, updated there in
    /// one submission, and copied back.
    func runOnGPU(_ context: GPUContext, _ constants: [OptimizerConstants], _ packed: inout PackedStep) throws {
        let count = packed.parameters.count
        guard count > 0 else { return }
        let buffers = try gpuBuffers(count: count, on: context)
        let arrays = [packed.parameters, packed.gradients, packed.first, packed.second]
        for (buffer, values) in zip([buffers.parameters, buffers.gradients, buffers.first, buffers.second], arrays) {
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
        context.counters.upload(bytes: 4 * count * 4)
        context.counters.download(bytes: 3 * count * 4)
        packed.parameters = Array(try OptimizerBuffers.floats(buffers.parameters).prefix(count))
        packed.first = Array(try OptimizerBuffers.floats(buffers.first).prefix(count))
        packed.second = Array(try OptimizerBuffers.floats(buffers.second).prefix(count))
    }

    /// The kept buffers when they hold `count` floats, else new ones.
    private func gpuBuffers(count: Int, on context: GPUContext) throws -> OptimizerBuffers {
        if let buffers, buffers.count == count { return buffers }
        let made = try OptimizerBuffers(count: count, on: context)
        buffers = made
        return made
    }
}
