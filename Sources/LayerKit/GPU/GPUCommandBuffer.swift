import Foundation
internal import VulkanCompute

/// A sequence of GPU work on slice images, run with one submission: the
/// `MTLCommandBuffer` a custom layer's `encode` receives.
///
/// Each encode call is ordered after the earlier work it depends on: a
/// barrier goes before a dispatch or copy that reads or writes an image or
/// buffer written since the last barrier, or writes one read since then
/// (what a kernel writes: its bindings not declared `readonly`); work on
/// other resources runs without one. A profiled buffer puts a barrier
/// before every item, so each is timed alone. Work is recorded in the
/// profile when the buffer has a profiler. Downloads land in their tensors
/// when `waitUntilCompleted()` returns.
public final class GPUCommandBuffer: @unchecked Sendable {
    /// The context whose device runs the work.
    public let context: GPUContext
    /// The underlying Vulkan command buffer.
    let commands: CommandBuffer
    private var completions: [() throws -> Void] = []
    private var staging: [Buffer] = []
    /// Resources read and written since the last barrier.
    private var readSinceBarrier = Set<ObjectIdentifier>()
    private var writtenSinceBarrier = Set<ObjectIdentifier>()
    /// Whether anything was recorded yet (a profiled buffer's barriers).
    private var recordedAny = false
    /// Barriers recorded so far (tests count them).
    private(set) var barrierCount = 0
    /// Set when the buffer reports to a `Profiler`.
    private let profile: GPUWorkProfile?

    init(context: GPUContext, profiler: Profiler? = nil) throws {
        self.context = context
        commands = try CommandBuffer(device: context.device)
        profile = profiler.map(GPUWorkProfile.init)
    }

    /// Encodes a copy of `tensor` into `image`. The tensor is read now: it
    /// is converted on the host to fp16 texels (round to nearest, ties to
    /// even; padding lanes zero) in a pooled staging buffer, which the GPU
    /// then copies into the image. Half the bytes of Float32 cross to the
    /// device, and no shader runs.
    public func upload(_ tensor: Tensor, to image: SliceImage) throws {
        try requireSameShape(tensor, image, "upload")
        let staging = try context.stagingPool.take(length: image.texelBytes)
        holdUntilCompleted(staging)
        context.counters.upload(bytes: image.texelBytes)
        guard let contents = staging.contents else {
            throw LayerKitError.unsupported("staging buffer memory is not mapped")
        }
        try hostStep(.upload, "upload: pack fp32 to fp16 (host)", shape: image.shape,
                     bytes: 4 * tensor.count + image.texelBytes) {
            try SliceConversion.pack(tensor, into: contents, threadCount: context.conversionThreads)
        }
        try record(.init(kind: .upload, name: "upload: copy to image", shape: image.shape, bytes: 2 * image.texelBytes),
                   reads: [staging], writes: [image.texture]) {
            try commands.copy(from: staging, to: image.texture)
        }
    }

    /// Encodes a copy of `image` into `tensor`, which holds the values once
    /// `waitUntilCompleted()` returns: the GPU copies the fp16 texels into a
    /// pooled staging buffer, and the host widens them into the tensor.
    public func download(_ image: SliceImage, into tensor: Tensor) throws {
        try requireSameShape(tensor, image, "download")
        let staging = try context.stagingPool.take(length: image.texelBytes)
        holdUntilCompleted(staging)
        context.counters.download(bytes: image.texelBytes)
        try record(.init(kind: .download, name: "download: copy from image", shape: image.shape,
                         bytes: 2 * image.texelBytes), reads: [image.texture], writes: [staging]) {
            try commands.copy(from: image.texture, to: staging)
        }
        let threads = context.conversionThreads
        completions.append { [unowned self] in
            if let contents = staging.contents {
                try hostStep(.download, "download: unpack fp16 to fp32 (host)", shape: image.shape,
                             bytes: image.texelBytes + 4 * tensor.count) {
                    try SliceConversion.unpack(contents, into: tensor, threadCount: threads)
                }
            }
        }
    }

    /// Encodes `kernel` from `input` to `output` (same shape; they may be the
    /// same image). `parameters` feed `param(i)`; each of `weights` is one
    /// per-channel set (`featureChannels` values) feeding `weight(k)`.
    public func dispatch(_ kernel: PerElementKernel, input: SliceImage, output: SliceImage,
                         parameters: [Float] = [], weights: [[Float]] = []) throws {
        try dispatch(context.kernel(for: kernel), input: input, output: output,
                     parameters: parameters, weights: weights)
    }

    /// `dispatch(_:input:output:parameters:weights:)` with the element-wise
    /// template's kernel already made (by a layer's `prepare`).
    func dispatch(_ kernel: GPUKernel<PerElementConstants>, input: SliceImage, output: SliceImage,
                  parameters: [Float], weights: [[Float]]) throws {
        for set in weights where set.count != input.featureChannels {
            throw LayerKitError.invalidWeights(
                "\(kernel.name): \(set.count) weights for \(input.featureChannels) channels")
        }
        let layout = PerElementConstants.weightLayout(weights, channels: input.featureChannels)
        let weightBuffer = try temporaryBuffer(floats: layout.count) { base in
            layout.withUnsafeBufferPointer { if let source = $0.baseAddress { base.update(from: source, count: layout.count) } }
        }
        try dispatch(kernel, input: input, output: output, parameters: parameters, weightBuffer: weightBuffer)
    }

    /// The element-wise template's dispatch with its per-channel weights in
    /// `weightBuffer`, laid out by `PerElementConstants.weightLayout`.
    func dispatch(_ kernel: GPUKernel<PerElementConstants>, input: SliceImage, output: SliceImage,
                  parameters: [Float], weightBuffer: GPUBuffer) throws {
        guard input.shape == output.shape else {
            throw LayerKitError.shapeMismatch(
                "\(kernel.name): input \(Tensor.describe(input.shape)) and output \(Tensor.describe(output.shape)) differ")
        }
        guard parameters.count <= PerElementKernel.maxParameters else {
            throw LayerKitError.invalidParameter(
                "\(kernel.name): \(parameters.count) parameters, at most \(PerElementKernel.maxParameters)")
        }
        var constants = PerElementConstants.zero
        constants.shape = input.shapeConstants
        withUnsafeMutableBytes(of: &constants.parameters) { bytes in
            for (i, value) in parameters.enumerated() { bytes.storeBytes(of: value, toByteOffset: 4 * i, as: Float.self) }
        }
        try dispatch(kernel, images: [input, output], buffers: [weightBuffer], constants: constants,
                     threads: input.threads)
    }

    /// Encodes `kernel` over `threads` invocations (`image.threads` is one
    /// per texel of `image`), with `images` bound at bindings 0..<n, then
    /// `buffers`, and `constants` as its push constants; ordered after
    /// everything encoded before it, and profiled as the kernel's name.
    public func dispatch<Constants: BitwiseCopyable>(
        _ kernel: GPUKernel<Constants>, images: [SliceImage], buffers: [GPUBuffer] = [], constants: Constants,
        threads: (x: Int, y: Int, z: Int)
    ) throws {
        try dispatch(kernel, images: images, buffers: buffers, trailing: [], constants: constants, threads: threads)
    }

    /// `dispatch(_:images:buffers:constants:threads:)` with `trailing`
    /// bound after the buffers (a fused epilogue's values and residual).
    func dispatch<Constants: BitwiseCopyable>(
        _ kernel: GPUKernel<Constants>, images: [SliceImage], buffers: [GPUBuffer], trailing: [GPUBinding],
        constants: Constants, threads: (x: Int, y: Int, z: Int)
    ) throws {
        let kinds = trailing.map { binding -> ComputePipeline.BindingKind in
            switch binding { case .image: .storageImage; case .buffer: .storageBuffer }
        }
        guard images.count == kernel.imageCount, buffers.count == kernel.bufferCount,
              kernel.pipeline.bindings.dropFirst(images.count + buffers.count).elementsEqual(kinds) else {
            throw LayerKitError.invalidParameter(
                "kernel \(kernel.name) binds \(kernel.imageCount) images and \(kernel.bufferCount) buffers"
                + " (and \(kernel.pipeline.bindings.count - kernel.imageCount - kernel.bufferCount) after them), "
                + "got \(images.count), \(buffers.count) and \(trailing.count)")
        }
        let extra = trailing.map { binding -> CommandBuffer.Binding in
            switch binding { case .image(let image): .image(image.texture); case .buffer(let buffer): .buffer(buffer.buffer) }
        }
        let extraResources = trailing.map { binding -> AnyObject in
            switch binding { case .image(let image): image.texture; case .buffer(let buffer): buffer.buffer }
        }
        let extraImages = trailing.compactMap { binding -> SliceImage? in
            if case .image(let image) = binding { return image } else { return nil }
        }
        let bindings = images.map { CommandBuffer.Binding.image($0.texture) } + buffers.map { .buffer($0.buffer) } + extra
        // Binding i is resources[i]: the kernel's own, then the trailing ones.
        let resources: [AnyObject] = images.map(\.texture) + buffers.map(\.buffer) + extraResources
        let readOnly = kernel.pipeline.readOnlyBindings
        let writes = resources.indices.filter { !readOnly.contains($0) }.map { resources[$0] }
        let wg = kernel.pipeline.workgroupSize
        try record(.init(kind: .kernel, name: kernel.name, shape: images.last?.shape,
                         workgroupSize: [Int(wg.0), Int(wg.1), Int(wg.2)],
                         bytes: (images + extraImages).reduce(0) { $0 + $1.texelBytes }),
                   reads: resources, writes: writes) {
            try commands.dispatch(kernel.pipeline, bindings: bindings, pushConstants: PushConstants(of: constants),
                                  threads: threads)
        }
    }

    /// A pooled host-visible buffer of `floats` Float32 values (at least
    /// one), zero-filled, then written by `fill`, kept until the work
    /// completes: per-dispatch data costs no allocation.
    public func temporaryBuffer(floats: Int, fill: (UnsafeMutablePointer<Float>) -> Void = { _ in }) throws -> GPUBuffer {
        let count = max(floats, 1)
        let buffer = try context.stagingPool.take(length: count * 4)
        holdUntilCompleted(buffer)
        guard let base = buffer.contents?.bindMemory(to: Float.self, capacity: count) else {
            throw LayerKitError.unsupported("staging buffer memory is not mapped")
        }
        base.initialize(repeating: 0, count: count)
        fill(base)
        context.counters.upload(bytes: count * 4)
        return GPUBuffer(buffer: buffer)
    }

    /// A pooled buffer that will hold `image`'s raw fp16 texels
    /// (`[layer][y][x][lane]`, 2 bytes a lane), copied after the work
    /// encoded so far and kept until the work completes: for a kernel that
    /// reads more images than the 4 storage images a dispatch may bind
    /// (Attention's mask and past caches); GLSL reads two lanes a `uint`
    /// with `unpackHalf2x16`.
    func texelCopy(of image: SliceImage) throws -> GPUBuffer {
        let buffer = try context.stagingPool.take(length: image.texelBytes)
        holdUntilCompleted(buffer)
        try record(.init(kind: .kernel, name: "copy image to buffer", shape: image.shape, bytes: 2 * image.texelBytes),
                   reads: [image.texture], writes: [buffer]) {
            try commands.copy(from: image.texture, to: buffer)
        }
        return GPUBuffer(buffer: buffer)
    }

    /// Marks a GPU timestamp after all work encoded so far.
    public func timestamp(_ label: String) throws {
        try commands.timestamp(label)
        if commands.device.info.supportsTimestamps { profile?.noteCallerMark() }
    }

    /// Submits the work.
    public func commit() throws { try hostStep(.submit, "submit") { try commands.commit() } }

    /// Waits for the work, then fills the tensors of `download` calls.
    public func waitUntilCompleted() throws {
        try hostStep(.wait, "fence wait") { try commands.waitUntilCompleted() }
        if let profile {
            profile.finish(stamps: try commands.timestamps(),
                           firstOnMonotonicClock: try commands.firstTimestampOnMonotonicClock())
        }
        defer {
            // Only now is the GPU done with the staging buffers.
            staging.forEach(context.stagingPool.giveBack)
            staging.removeAll()
            completions.removeAll()
        }
        for completion in completions { try completion() }
    }

    /// GPU timestamps recorded with `timestamp(_:)`, in ns from the buffer's
    /// first mark (a profiled buffer's own marks are left out).
    public func timestamps() throws -> [GPUTimestamp] {
        let stamps = try commands.timestamps().map { GPUTimestamp(label: $0.label, nanoseconds: $0.nanoseconds) }
        guard let owners = profile?.markOwners, owners.count == stamps.count else { return stamps }
        return zip(stamps, owners).filter { !$0.1 }.map(\.0)
    }

    /// Records `work`, which reads `reads` and writes `writes`, after a
    /// barrier when it depends on work since the last one (read after
    /// write, write after write, write after read; every item but the first
    /// in a profiled buffer); in a profiled buffer, between GPU timestamps,
    /// as `item` (made only then).
    private func record(_ item: @autoclosure () -> GPUWorkProfile.Item, reads: [AnyObject], writes: [AnyObject],
                        _ work: () throws -> Void) throws {
        let (read, written) = (Set(reads.map(ObjectIdentifier.init)), Set(writes.map(ObjectIdentifier.init)))
        let dependent = profile != nil ? recordedAny
            : !read.isDisjoint(with: writtenSinceBarrier) || !written.isDisjoint(with: writtenSinceBarrier)
                || !written.isDisjoint(with: readSinceBarrier)
        if dependent {
            try commands.barrier()
            barrierCount += 1
            (readSinceBarrier, writtenSinceBarrier) = (read, written)
        } else {
            readSinceBarrier.formUnion(read)
            writtenSinceBarrier.formUnion(written)
        }
        recordedAny = true
        if let profile { try profile.bracket(item(), on: commands, work) } else { try work() }
    }

    /// Runs a host step, as a span when profiled.
    private func hostStep<T>(_ kind: ProfileSpan.Kind, _ name: String, shape: [Int]? = nil, bytes: Int? = nil,
                             _ body: () throws -> T) rethrows -> T {
        guard let profile else { return try body() }
        return try profile.host(kind, name, shape: shape, bytes: bytes, body)
    }

    /// Keeps a pooled staging buffer out of the pool until the work completes;
    /// if the command buffer is dropped unfinished, the buffer is just freed.
    private func holdUntilCompleted(_ buffer: Buffer) { staging.append(buffer) }

    private func requireSameShape(_ tensor: Tensor, _ image: SliceImage, _ what: String) throws {
        let s = try tensor.nchw()
        guard [s.n, s.c, s.h, s.w] == image.shape else {
            throw LayerKitError.shapeMismatch(
                "\(what): tensor \(Tensor.describe(tensor.shape)) does not match slice image \(Tensor.describe(image.shape))")
        }
    }
}
