import VulkanCompute

/// What a Vulkan device is and what it supports, as its driver reports it:
/// LayerKit's description, with no Vulkan type in it.
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

    /// Position in the loader's enumeration (what `LAYERKIT_DEVICE=<index>` names).
    public let index: Int
    /// The driver's device name, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    public let name: String
    /// Discrete, integrated, virtual, CPU or other.
    public let kind: Kind
    /// `major.minor.patch` of the Vulkan API the device supports.
    public let apiVersion: String
    /// `shaderFloat16`: fp16 arithmetic in shaders.
    public let supportsFloat16: Bool
    /// rgba16f usable as a storage image, the layout of every `SliceImage`.
    public let supportsRGBA16FStorage: Bool
    /// Whether compute queues record timestamps.
    public let supportsTimestamps: Bool
    /// Valid bits of the compute queue's timestamps (0 without them).
    public let timestampValidBits: UInt32
    /// Nanoseconds per timestamp tick.
    public let timestampPeriod: Float
    /// The widest and tallest 2D image (`maxImageDimension2D`).
    public let maxImageDimension2D: UInt32
    /// The most layers of an image array (`maxImageArrayLayers`).
    public let maxImageArrayLayers: UInt32
    /// Whether LayerKit can run on it: a compute queue and rgba16f storage images.
    public let isUsable: Bool

    init(_ info: PhysicalDeviceInfo) {
        index = info.index
        name = info.name
        kind = switch info.kind {
        case .discrete: .discrete
        case .integrated: .integrated
        case .virtual: .virtual
        case .cpu: .cpu
        case .other: .other
        }
        apiVersion = info.apiVersion
        supportsFloat16 = info.supportsFloat16
        supportsRGBA16FStorage = info.supportsRGBA16FStorage
        supportsTimestamps = info.supportsTimestamps
        timestampValidBits = info.timestampValidBits
        timestampPeriod = info.timestampPeriod
        maxImageDimension2D = info.maxImageDimension2D
        maxImageArrayLayers = info.maxImageArrayLayers
        isUsable = info.isUsable
    }
}
