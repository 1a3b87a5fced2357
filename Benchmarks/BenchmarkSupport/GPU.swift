import LayerKit

/// The default Vulkan device for a benchmark, or nil when there is none,
/// with a line saying which it is (and that an emulated one, such as Mesa's
/// lavapipe, gives no GPU speeds).
package func benchmarkGPUContext() -> (context: GPUContext?, note: String) {
    do {
        let context = try GPUContext()
        let info = context.deviceInfo
        return (context, "GPU: \(info.name), \(info.kind.rawValue)"
            + (info.kind == .cpu ? " — EMULATED on the CPU: these are not GPU speeds" : ""))
    } catch {
        return (nil, "GPU: none (\(error)); GPU rows skipped")
    }
}

/// Milliseconds of `layer`'s kernel alone on `input` into `output`, by GPU
/// timestamps around its `encode`, one sample per run after `warmup` runs.
package func gpuKernelSamples(_ layer: Layer, context: GPUContext, input: SliceImage,
                             output: SliceImage, warmup: Int, runs: Int) throws -> [Double] {
    var samples: [Double] = []
    for run in 0..<(warmup + runs) {
        let commands = try context.makeCommandBuffer()
        try commands.timestamp("before")
        try layer.encode(commandBuffer: commands, inputs: [input], outputs: [output])
        try commands.timestamp("after")
        try commands.commit()
        try commands.waitUntilCompleted()
        let stamps = try commands.timestamps()
        if run >= warmup, stamps.count == 2 { samples.append(stamps[1].nanoseconds / 1e6) }
    }
    return samples
}

extension SliceImage {
    /// Bytes the image's fp16 texels take, padding included (8 a texel of
    /// four channels): one pass of a kernel over it moves this much.
    package var fp16Bytes: Int { width * height * layers * 8 }
}
