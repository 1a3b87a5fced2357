import Foundation
public import VulkanCompute

/// LayerKit's handle on one Vulkan device: it makes slice images and
/// command buffers, and owns what they share: the pipelines of element-wise
/// kernels (created once, never per dispatch) and a pool of staging buffers
/// for uploads and downloads.
public final class GPUContext: @unchecked Sendable {
    /// The Vulkan device.
    public let device: Device
    /// Staging buffers reused across uploads and downloads.
    let stagingPool: StagingPool
    /// Threads that convert between Float32 tensors and fp16 texels.
    let conversionThreads = activeProcessorCount

    /// The most bytes of idle staging buffers a context keeps for reuse.
    public static let maxIdleStagingBytes = 256 << 20

    /// Every shader is 8x8 texels per workgroup, one array layer deep.
    static let workgroupSize: (UInt32, UInt32, UInt32) = (8, 8, 1)
    /// `LK_SHAPE_FIELDS`: five uints.
    static let shapeConstantSize = 20
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

    /// Wraps an open device.
    public convenience init(device: Device) throws {
        try self.init(device: device, stagingGuardBytes: 0)
    }

    /// Wraps an open device; staging buffers carry `stagingGuardBytes` of
    /// canary past their used length (`StagingPool.overruns` counts damage).
    init(device: Device, stagingGuardBytes: Int) throws {
        self.device = device
        deviceInfo = GPUDeviceInfo(device.info)
        stagingPool = StagingPool(device: device, maxIdleBytes: GPUContext.maxIdleStagingBytes,
                                  guardBytes: stagingGuardBytes)
    }

    /// What the device is.
    public let deviceInfo: GPUDeviceInfo

    /// How many staging buffers uploads and downloads have allocated so far.
    /// Each is returned to a pool when its command buffer completes, so
    /// repeated transfers of one shape stop adding to this count.
    public var stagingBufferAllocations: Int { stagingPool.allocationCount }

    /// An uninitialized slice image for an NCHW shape.
    public func makeSliceImage(batch: Int, featureChannels: Int, height: Int, width: Int) throws -> SliceImage {
        try SliceImage(device: device, batch: batch, featureChannels: featureChannels,
                       height: height, width: width)
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
        shape.count == 4 && ImagePieces.fits(n: shape[0], c: shape[1], h: shape[2], w: shape[3],
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

    /// The pipeline of `kernel` instantiated into the element-wise template.
    func pipeline(for kernel: PerElementKernel) throws -> ComputePipeline {
        guard !kernel.body.contains("\n"), !kernel.functions.contains("\n") else {
            throw LayerKitError.invalidParameter("kernel \(kernel.name): the GLSL body and functions must be one line each")
        }
        return try device.pipeline(
            name: "\(kernel.name) (elementwise.comp)", source: try GPUContext.shader("elementwise.comp"),
            includes: GPUContext.includes, defines: ["LK_BODY(x)": "(\(kernel.body))", "LK_FUNCTIONS": kernel.functions],
            bindings: [.storageImage, .storageImage, .storageBuffer],
            pushConstantSize: GPUContext.shapeConstantSize + 4 * PerElementKernel.maxParameters,
            workgroupSize: GPUContext.workgroupSize)
    }

    /// The pipeline of one of LayerKit's shaders (`Shaders/<file>`), with
    /// `images` rgba16f storage images bound first (slots 0..<images), then
    /// `buffers` storage buffers, and `pushConstantSize` bytes of push
    /// constants. Compiled and created once per device and set of defines.
    public func pipeline(shader file: String, defines: KeyValuePairs<String, String> = [:], images: Int,
                         buffers: Int = 0, pushConstantSize: Int) throws -> ComputePipeline {
        let bindings = Array(repeating: ComputePipeline.BindingKind.storageImage, count: images)
            + Array(repeating: .storageBuffer, count: buffers)
        let variant = defines.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return try device.pipeline(
            name: variant.isEmpty ? file : "\(file) [\(variant)]", source: try GPUContext.shader(file),
            includes: GPUContext.includes, defines: defines, bindings: bindings,
            pushConstantSize: pushConstantSize, workgroupSize: GPUContext.workgroupSize)
    }

    private static func shader(_ name: String) throws -> String {
        guard let source = EmbeddedShaders.source(named: name) else {
            throw LayerKitError.unsupported("shader \(name) is not built into this binary")
        }
        return source
    }
}
