import Foundation
public import VulkanCompute

/// A sequence of GPU work on slice images, run with one submission: the
/// `MTLCommandBuffer` a custom layer's `encode` receives.
///
/// Every encode call orders itself after the previous one (a barrier), since
/// layer work on images is a dependent chain. Downloads land in their
/// tensors when `waitUntilCompleted()` returns.
public final class GPUCommandBuffer: @unchecked Sendable {
    /// The context whose device runs the work.
    public let context: GPUContext
    /// The underlying Vulkan command buffer.
    public let commands: CommandBuffer
    private var completions: [() -> Void] = []
    private var pendingBarrier = false

    init(context: GPUContext) throws {
        self.context = context
        commands = try CommandBuffer(device: context.device)
    }

    /// Encodes a copy of `tensor` into `image`: the tensor is read now into a
    /// staging buffer, packed into fp16 slices on the GPU (round to nearest).
    public func upload(_ tensor: Tensor, to image: SliceImage) throws {
        try requireSameShape(tensor, image, "upload")
        let staging = try Buffer(device: context.device, length: max(tensor.count, 1) * 4)
        staging.contents?.copyMemory(from: tensor.dataPointer, byteCount: tensor.count * 4)
        try encode(context.packPipeline, [.buffer(staging), .image(image.texture)], image.shapeConstants, image)
    }

    /// Encodes a copy of `image` into `tensor`, which holds the values once
    /// `waitUntilCompleted()` returns.
    public func download(_ image: SliceImage, into tensor: Tensor) throws {
        try requireSameShape(tensor, image, "download")
        let staging = try Buffer(device: context.device, length: max(tensor.count, 1) * 4)
        try encode(context.unpackPipeline, [.image(image.texture), .buffer(staging)], image.shapeConstants, image)
        completions.append {
            if let contents = staging.contents {
                tensor.dataPointer.update(from: contents.assumingMemoryBound(to: Float.self), count: tensor.count)
            }
        }
    }

    /// Encodes `kernel` from `input` to `output` (same shape; they may be the
    /// same image). `parameters` feed `param(i)`; each of `weights` is one
    /// per-channel set (`featureChannels` values) feeding `weight(k)`.
    public func dispatch(_ kernel: PerElementKernel, input: SliceImage, output: SliceImage,
                         parameters: [Float] = [], weights: [[Float]] = []) throws {
        guard input.shape == output.shape else {
            throw LayerKitError.shapeMismatch(
                "\(kernel.name): input \(Tensor.describe(input.shape)) and output \(Tensor.describe(output.shape)) differ")
        }
        guard parameters.count <= PerElementKernel.maxParameters else {
            throw LayerKitError.invalidParameter(
                "\(kernel.name): \(parameters.count) parameters, at most \(PerElementKernel.maxParameters)")
        }
        for set in weights where set.count != input.featureChannels {
            throw LayerKitError.invalidWeights(
                "\(kernel.name): \(set.count) weights for \(input.featureChannels) channels")
        }
        // One padded run of slices*4 floats per set; a dummy float when there are none.
        let padded = input.slices * 4
        let weightBuffer = try Buffer(device: context.device, length: max(weights.count * padded, 1) * 4)
        if let base = weightBuffer.contents?.bindMemory(to: Float.self, capacity: max(weights.count * padded, 1)) {
            base.initialize(repeating: 0, count: max(weights.count * padded, 1))
            for (k, set) in weights.enumerated() {
                for (c, value) in set.enumerated() { base[k * padded + c] = value }
            }
        }
        var constants = input.shapeConstants
        for i in 0..<PerElementKernel.maxParameters {
            constants.append(i < parameters.count ? parameters[i] : 0)
        }
        try encode(context.pipeline(for: kernel),
                   [.image(input.texture), .image(output.texture), .buffer(weightBuffer)], constants, input)
    }

    /// Marks a GPU timestamp after all work encoded so far.
    public func timestamp(_ label: String) throws { try commands.timestamp(label) }

    /// Submits the work.
    public func commit() throws { try commands.commit() }

    /// Waits for the work, then fills the tensors of `download` calls.
    public func waitUntilCompleted() throws {
        try commands.waitUntilCompleted()
        completions.forEach { $0() }
        completions.removeAll()
    }

    /// GPU timestamps recorded with `timestamp(_:)`, in ns from the first.
    public func timestamps() throws -> [CommandBuffer.Timestamp] { try commands.timestamps() }

    private func encode(_ pipeline: ComputePipeline, _ bindings: [CommandBuffer.Binding],
                        _ constants: PushConstants, _ image: SliceImage) throws {
        if pendingBarrier { try commands.barrier() }
        try commands.dispatch(pipeline, bindings: bindings, pushConstants: constants, threads: image.threads)
        pendingBarrier = true
    }

    private func requireSameShape(_ tensor: Tensor, _ image: SliceImage, _ what: String) throws {
        let s = try tensor.nchw()
        guard [s.n, s.c, s.h, s.w] == image.shape else {
            throw LayerKitError.shapeMismatch(
                "\(what): tensor \(Tensor.describe(tensor.shape)) does not match slice image \(Tensor.describe(image.shape))")
        }
    }
}
