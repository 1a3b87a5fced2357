internal import VulkanCompute

/// What a Vulkan device is and what it supports, as its driver reports it:
/// LayerKit's description, with no Vulkan type in it. Two descriptions are
/// equal when they name the same device (index and name).
public struct GPUDeviceInfo: Sendable, Equatable {
    /// The kind of device, in LayerKit's order of preference.
    public enum Kind: String, Sendable {
        case discrete = "discrete GPU"
        case integrated = "integrated GPU"
        case virtual = "virtual GPU"
        /// A CPU emulating a GPU (Mesa's lavapipe): slower than the CPU evaluator.
        case cpu = "CPU (software rasterizer)"
        case other = "other"
    }

    /// The driver's report this describes.
    private let physical: PhysicalDeviceInfo

    init(_ physical: PhysicalDeviceInfo) { self.physical = physical }

    /// The device's position among all devices: what `LAYERKIT_DEVICE=<index>` names.
    public var index: Int { physical.index }
    /// The name the driver gives, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    public var name: String { physical.name }
    /// `major.minor.patch` of the device's Vulkan API.
    public var apiVersion: String { physical.apiVersion }
    /// Discrete, integrated, virtual, a CPU, or other.
    public var kind: Kind {
        switch physical.kind {
        case .discrete: .discrete
        case .integrated: .integrated
        case .virtual: .virtual
        case .cpu: .cpu
        case .other: .other
        }
    }
    /// Whether shaders may compute in fp16 (`shaderFloat16`); LayerKit computes in fp32.
    public var supportsFloat16: Bool { physical.supportsFloat16 }
    /// Invocations per subgroup (`subgroupSize`; lavapipe: 8 at 256-bit SIMD).
    public var subgroupSize: UInt32 { physical.subgroupSize }
    /// Whether compute shaders have subgroup ballots and broadcasts. No
    /// built-in kernel uses them: `conv2d.comp` sharing its weight loads by
    /// `subgroupBroadcast` ran 2-8x slower on lavapipe (size 8).
    public var supportsSubgroupBallot: Bool { physical.supportsSubgroupBallot }
    /// Whether rgba16f works as a storage image, the layout of every `SliceImage`.
    public var supportsRGBA16FStorage: Bool { physical.supportsRGBA16FStorage }
    /// Whether GPU work can be timed (compute-queue timestamps).
    public var supportsTimestamps: Bool { physical.supportsTimestamps }
    /// Whether GPU timestamps are put on the host's clock by calibration
    /// (`VK_EXT_calibrated_timestamps` with `CLOCK_MONOTONIC`); otherwise the
    /// profiler places them by the fence wait (see `Profiler`).
    public var supportsCalibratedTimestamps: Bool { physical.supportsCalibratedTimestamps }
    /// Whether shaders declare `SignedZeroInfNanPreserve` for fp32
    /// (`VK_KHR_shader_float_controls`); formulas keep IEEE results either way.
    public var supportsSignedZeroInfNanPreserve: Bool { physical.supportsSignedZeroInfNanPreserve32 }
    /// How many bits of a timestamp are valid (0 without timestamps).
    public var timestampValidBits: UInt32 { physical.timestampValidBits }
    /// How many nanoseconds one timestamp tick is.
    public var timestampPeriod: Float { physical.timestampPeriod }
    /// The largest width or height of one image (`maxImageDimension2D`).
    public var maxImageDimension2D: UInt32 { physical.maxImageDimension2D }
    /// The most array layers of one image (`maxImageArrayLayers`): batch times slices.
    public var maxImageArrayLayers: UInt32 { physical.maxImageArrayLayers }
    /// Bytes of `shared` storage one workgroup may declare (`maxComputeSharedMemorySize`; at least 16,384).
    public var maxComputeSharedMemorySize: UInt32 { physical.maxComputeSharedMemorySize }
    /// Whether LayerKit can run on it (a compute queue and rgba16f storage images).
    public var isUsable: Bool { physical.isUsable }

    public static func == (a: GPUDeviceInfo, b: GPUDeviceInfo) -> Bool { a.index == b.index && a.name == b.name }
}
