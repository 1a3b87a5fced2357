import Foundation
internal import VulkanCompute

/// LayerKit's handle on one Vulkan device: it makes slice images, buffers,
/// kernels and command buffers, and owns what they share: the pipelines of
/// kernels (created once per shader variant, never per dispatch) and a pool
/// of staging buffers for uploads and downloads.
public final class GPUContext: @unchecked Sendable {
    /// The Vulkan device.
    let device: Device
    /// Staging buffers reused across uploads and downloads.
    let stagingPool: StagingPool
    /// The buffers of `makeBuffer(floats:)`, given back when their last
    /// `GPUBuffer` copy dies and reused for the next of the same length.
    let bufferPool: StagingPool
    /// The textures of slice images that died, reused for the next of the same extent.
    let imagePool: ImagePool
    /// The totals behind `counts`.
    let counters = GPUCounters()
    /// Threads that convert between Float32 tensors and fp16 texels.
    let conversionThreads = activeProcessorCount

    /// The most bytes of idle staging buffers a context keeps for reuse.
    public static let maxIdleStagingBytes = 256 << 20
    /// The most bytes of idle images, and of idle `makeBuffer` buffers, a
    /// context keeps for reuse (each pool its own).
    public static let maxIdleResourceBytes = 512 << 20

    private let kernelLock = NSLock()
    /// Pipelines by shader variant; a user kernel's source is kept to refuse
    /// a second source under the same name.
    private var kernels: [KernelKey: (pipeline: ComputePipeline, source: String?)] = [:]

    /// The GLSL files shaders may `#include` (`layerkit.glsl`, `ops.glsl`).
    static let includes: [String: String] = {
        var files: [String: String] = [:]
        for (name, text) in EmbeddedShaders.sources where name.hasSuffix(".glsl") { files[name] = text }
        return files
    }()

    /// Opens the device `LAYERKIT_DEVICE` names, else the preferred one
    /// (see `availableDevices()`). `validation` nil reads `LAYERKIT_VALIDATION`.
    public convenience init(validation: Bool? = nil) throws {
        try self.init(device: Device(validation: validation ?? GPUEnvironment.validation,
                                     deviceOverride: GPUEnvironment.deviceOverride))
    }

    /// Wraps an open device; staging buffers carry `stagingGuardBytes` of
    /// canary past their used length (`StagingPool.overruns` counts damage).
    /// `idleResourceBytes` caps the image and weight-buffer pools (0: none
    /// kept, every image and buffer made anew, as before the pools: tests
    /// compare the two).
    init(device: Device, stagingGuardBytes: Int = 0, idleResourceBytes: Int = GPUContext.maxIdleResourceBytes) throws {
        self.device = device
        deviceInfo = GPUDeviceInfo(device.info)
        stagingPool = StagingPool(device: device, maxIdleBytes: GPUContext.maxIdleStagingBytes,
                                  guardBytes: stagingGuardBytes)
        bufferPool = StagingPool(device: device, maxIdleBytes: idleResourceBytes, storage: .constant)
        imagePool = ImagePool(maxIdleBytes: idleResourceBytes)
    }

    /// What the device is.
    public let deviceInfo: GPUDeviceInfo

    /// How many staging buffers uploads and downloads have allocated so far.
    /// Each is returned to a pool when its command buffer completes, so
    /// repeated transfers of one shape stop adding to this count.
    public var stagingBufferAllocations: Int { stagingPool.allocationCount }

    /// The images and buffers this context has created and the bytes it
    /// has moved so far (`GPUCounts`; subtract two readings).
    public var counts: GPUCounts {
        counters.counts(pooled: stagingPool.allocationCount + bufferPool.allocationCount)
    }

    /// An uninitialized slice image for an NCHW shape.
    public func makeSliceImage(batch: Int, featureChannels: Int, height: Int, width: Int) throws -> SliceImage {
        try SliceImage(device: device, batch: batch, featureChannels: featureChannels,
                       height: height, width: width, pool: imagePool, created: counters.imageCreated)
    }

    /// An uninitialized slice image for a 4-element NCHW `shape`.
    public func makeSliceImage(shape: [Int]) throws -> SliceImage {
        guard shape.count == 4 else {
            throw LayerKitError.shapeMismatch("a slice image needs an NCHW shape, got \(Tensor.describe(shape))")
        }
        return try makeSliceImage(batch: shape[0], featureChannels: shape[1], height: shape[2], width: shape[3])
    }

    /// A slice image shaped like `tensor` (rank 1 to 4, read as NCHW).
    public func makeSliceImage(like tensor: Tensor) throws -> SliceImage {
        let s = try tensor.nchw()
        return try makeSliceImage(batch: s.n, featureChannels: s.c, height: s.h, width: s.w)
    }

    /// Whether `tensor` fits one slice image on this device: width and
    /// height within `maxImageDimension2D`, batch × slices within
    /// `maxImageArrayLayers`.
    public func fitsOneImage(_ tensor: Tensor) throws -> Bool {
        let s = try tensor.nchw()
        return fitsOneImage(shape: [s.n, s.c, s.h, s.w])
    }

    /// Whether an NCHW image `shape` fits one slice image on this device.
    public func fitsOneImage(shape: [Int]) -> Bool {
        shape.count == 4 && imageLimitExceeded(shape: shape) == nil
    }

    /// The device limit an NCHW image `shape` exceeds, if any.
    func imageLimitExceeded(shape: [Int]) -> ImagePieces.Limit? {
        ImagePieces.limitExceeded(n: shape[0], c: shape[1], h: shape[2], w: shape[3],
                                  maxDimension: Int(deviceInfo.maxImageDimension2D),
                                  maxLayers: Int(deviceInfo.maxImageArrayLayers))
    }

    /// A new command buffer to encode uploads, kernels and downloads into;
    /// with a `profiler`, each of them and the submit and wait are recorded
    /// there (the work is bracketed by GPU timestamps).
    public func makeCommandBuffer(profiler: Profiler? = nil) throws -> GPUCommandBuffer {
        try GPUCommandBuffer(context: self, profiler: profiler)
    }

    /// Uploads `tensor` into a new slice image (fp16-rounded to nearest) and waits.
    public func upload(_ tensor: Tensor) throws -> SliceImage {
        let image = try makeSliceImage(like: tensor)
        let commands = try makeCommandBuffer()
        try commands.upload(tensor, to: image)
        try commands.commit()
        try commands.waitUntilCompleted()
        return image
    }

    /// Downloads `image` into a new Float32 tensor and waits.
    public func download(_ image: SliceImage) throws -> Tensor {
        let tensor = try Tensor(shape: image.shape)
        let commands = try makeCommandBuffer()
        try commands.download(image, into: tensor)
        try commands.commit()
        try commands.waitUntilCompleted()
        return tensor
    }

    /// Compiles a custom layer's GLSL compute shader `source` for this
    /// context's device. The shader binds `images` rgba16f 2D-array storage
    /// images first (bindings 0..<images, set 0), then `buffers` std430
    /// storage buffers; its push-constant block holds a `Constants` value
    /// (throws unless `MemoryLayout<Constants>.size` is the block's size).
    /// It may `#include "layerkit.glsl"` (see Docs/CUSTOM_KERNELS.md) and
    /// use `LK_WORKGROUP_SIZE`. `defines` are `#define name value` lines put
    /// after `#version`. Compiled once per name and defines: a later call
    /// with the same ones returns the same pipeline; another source under a
    /// used name throws. A GLSL error throws `LayerKitError.invalidParameter`
    /// naming the kernel and line.
    public func makeKernel<Constants: BitwiseCopyable>(
        name: String, source: String, images: Int, buffers: Int = 0, constants: Constants.Type,
        defines: [(name: String, value: String)] = []
    ) throws -> GPUKernel<Constants> {
        try kernel(name: name, shader: name, source: { source }, userSource: source,
                   images: images, buffers: buffers, defines: defines)
    }

    /// A buffer holding `floats` (at least one float; zeros if empty) on this
    /// context's device, for values a layer keeps there: weights, biases,
    /// tables. Make it once (in `prepare`) and bind it at every dispatch.
    /// Its memory comes from, and goes back to, the context's buffer pool.
    public func makeBuffer(floats: [Float]) throws -> GPUBuffer { try makeBuffer(floats: floats, pooled: true) }

    /// `makeBuffer(floats:)`, or with `pooled` false a buffer of its own,
    /// neither taken from the pool nor given back to it: for state kept for
    /// the context's life (the optimizer's), which would otherwise hold
    /// buffers the layers of the next step take back.
    func makeBuffer(floats: [Float], pooled: Bool) throws -> GPUBuffer {
        let count = max(floats.count, 1)
        let buffer: Buffer
        if pooled {
            buffer = try bufferPool.take(length: count * 4)
        } else {
            buffer = try Buffer(device: device, length: count * 4, storage: .constant)
            counters.bufferCreated()
        }
        counters.upload(bytes: floats.count * 4)
        guard let base = buffer.contents?.bindMemory(to: Float.self, capacity: count) else {
            throw LayerKitError.unsupported("constant buffer memory is not mapped")
        }
        base.initialize(repeating: 0, count: count)
        floats.withUnsafeBufferPointer { if let source = $0.baseAddress { base.update(from: source, count: floats.count) } }
        return GPUBuffer(buffer: buffer, returningTo: pooled ? bufferPool : nil)
    }

    /// The kernel of `shader` with `defines`, from the cache or compiled now
    /// (`source` is read only then). `userSource`, for a user kernel, must
    /// match the one cached under the same key.
    func kernel<Constants: BitwiseCopyable>(
        name: String, shader: String, source: () throws -> String, userSource: String? = nil,
        images: Int, buffers: Int, trailing: [ComputePipeline.BindingKind] = [], defines: [(name: String, value: String)]
    ) throws -> GPUKernel<Constants> {
        let key = KernelKey(shader: shader, defines: defines.map { .init(name: $0.name, value: $0.value) },
                            images: images, buffers: buffers, trailing: trailing)
        let pipeline: ComputePipeline
        kernelLock.lock(); defer { kernelLock.unlock() }
        if let cached = kernels[key] {
            guard cached.source == userSource else {
                throw LayerKitError.invalidParameter(
                    "kernel \(name): another source was compiled under this name; give each shader its own name")
            }
            pipeline = cached.pipeline
        } else {
            let bindings = Array(repeating: ComputePipeline.BindingKind.storageImage, count: images)
                + Array(repeating: .storageBuffer, count: buffers) + trailing
            do {
                pipeline = try device.makePipeline(name: name, source: source(), includes: GPUContext.includes,
                                                   defines: defines, bindings: bindings)
            } catch VulkanError.shaderCompilation(let message) {
                // The source is the caller's to fix: a LayerKit error, naming shader and line.
                throw LayerKitError.invalidParameter(message)
            }
            kernels[key] = (pipeline, userSource)
        }
        guard MemoryLayout<Constants>.size == pipeline.pushConstantSize else {
            throw LayerKitError.invalidParameter(
                "kernel \(name): \(Constants.self) is \(MemoryLayout<Constants>.size) bytes but the shader's push "
                + "constants are \(pipeline.pushConstantSize); declare the struct's fields as the block's, in order")
        }
        return GPUKernel(name: name, imageCount: images, bufferCount: buffers, pipeline: pipeline)
    }

    /// The number of pipelines this context has created (each exactly once).
    var pipelineCount: Int {
        kernelLock.lock(); defer { kernelLock.unlock() }
        return kernels.count
    }

    /// `kernel` instantiated into the element-wise template.
    func kernel(for kernel: PerElementKernel) throws -> GPUKernel<PerElementConstants> {
        guard !kernel.body.contains("\n"), !kernel.functions.contains("\n") else {
            throw LayerKitError.invalidParameter("kernel \(kernel.name): the GLSL body and functions must be one line each")
        }
        return try BuiltInShaders.elementwise.kernel(
            on: self, name: "\(kernel.name) (elementwise.comp)",
            defines: [("LK_BODY(x)", "(\(kernel.body))"), ("LK_FUNCTIONS", kernel.functions)]
                + (device.info.supportsSignedZeroInfNanPreserve32 ? [("LK_IEEE", "1")] : []))
    }

    /// The text of built-in shader `Shaders/<name>`.
    static func builtInSource(_ name: String) throws -> String {
        guard let source = EmbeddedShaders.source(named: name) else {
            throw LayerKitError.unsupported("shader \(name) is not built into this binary")
        }
        return source
    }
}
