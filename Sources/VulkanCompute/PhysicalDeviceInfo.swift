import CVulkan

/// What a physical device is and what it supports, as the driver reports it.
public struct PhysicalDeviceInfo: @unchecked Sendable {
    /// The kind of device, in LayerKit's order of preference.
    public enum Kind: String, Sendable, Comparable {
        case discrete = "discrete GPU"
        case integrated = "integrated GPU"
        case virtual = "virtual GPU"
        case cpu = "CPU (software rasterizer)"
        case other = "other"

        var rank: Int {
            switch self {
            case .discrete: 0
            case .integrated: 1
            case .virtual: 2
            case .cpu: 3
            case .other: 4
            }
        }
        public static func < (a: Kind, b: Kind) -> Bool { a.rank < b.rank }
    }

    /// Position in the loader's enumeration (what a numeric device override names).
    public let index: Int
    /// The driver's device name, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    public let name: String
    public let kind: Kind
    /// `major.minor.patch` of the Vulkan API the device supports.
    public let apiVersion: String
    /// `shaderFloat16`: fp16 arithmetic in shaders.
    public let supportsFloat16: Bool
    /// `subgroupSize` of `VkPhysicalDeviceSubgroupProperties` (Vulkan 1.1).
    public let subgroupSize: UInt32
    /// Whether compute shaders have subgroup basic and ballot operations
    /// (`VK_SUBGROUP_FEATURE_BASIC_BIT | BALLOT_BIT` in the compute stage):
    /// `subgroupBroadcast`, `subgroupBallot`.
    public let supportsSubgroupBallot: Bool
    /// rgba16f (`R16G16B16A16_SFLOAT`) usable as an optimal-tiling storage image.
    public let supportsRGBA16FStorage: Bool
    /// Whether compute queues support timestamps (`timestampComputeAndGraphics`
    /// and non-zero `timestampValidBits` on the compute family).
    public let supportsTimestamps: Bool
    /// Whether shaders may declare SPIR-V's `SignedZeroInfNanPreserve` for
    /// fp32 (`VK_KHR_shader_float_controls`): the driver then keeps IEEE
    /// results for ±0, ±inf and NaN (no folding of `x * 0` to 0).
    public let supportsSignedZeroInfNanPreserve32: Bool
    /// Whether the device's timestamps can be read together with the host's
    /// `CLOCK_MONOTONIC` (`VK_EXT_calibrated_timestamps`).
    public let supportsCalibratedTimestamps: Bool
    /// Nanoseconds per timestamp tick.
    public let timestampPeriod: Float
    /// Valid bits of the compute queue family's timestamps.
    public let timestampValidBits: UInt32
    /// Index of the first queue family with compute, nil if none.
    public let computeQueueFamily: UInt32?
    /// `maxImageDimension2D`.
    public let maxImageDimension2D: UInt32
    /// `maxImageArrayLayers`.
    public let maxImageArrayLayers: UInt32
    /// `maxComputeWorkGroupCount`.
    public let maxComputeWorkGroupCount: (UInt32, UInt32, UInt32)
    /// `maxComputeSharedMemorySize`: bytes of `shared` storage a workgroup may declare.
    public let maxComputeSharedMemorySize: UInt32

    let handle: VkPhysicalDevice
    let hasFloat16Extension: Bool

    /// Whether LayerKit can run on it: a compute queue and rgba16f storage images.
    public var isUsable: Bool { computeQueueFamily != nil && supportsRGBA16FStorage }

    init(index: Int, handle: VkPhysicalDevice, instance: VkInstance) {
        self.index = index
        self.handle = handle
        var properties = VkPhysicalDeviceProperties()
        vkGetPhysicalDeviceProperties(handle, &properties)
        name = fixedString(properties.deviceName)
        kind = switch properties.deviceType {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: .discrete
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: .integrated
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: .virtual
        case VK_PHYSICAL_DEVICE_TYPE_CPU: .cpu
        default: .other
        }
        let v = properties.apiVersion
        apiVersion = "\(v >> 22 & 0x7F).\(v >> 12 & 0x3FF).\(v & 0xFFF)"
        let limits = properties.limits
        timestampPeriod = limits.timestampPeriod
        maxImageDimension2D = limits.maxImageDimension2D
        maxImageArrayLayers = limits.maxImageArrayLayers
        maxComputeWorkGroupCount = limits.maxComputeWorkGroupCount
        maxComputeSharedMemorySize = limits.maxComputeSharedMemorySize

        var formatProperties = VkFormatProperties()
        vkGetPhysicalDeviceFormatProperties(handle, VK_FORMAT_R16G16B16A16_SFLOAT, &formatProperties)
        supportsRGBA16FStorage = formatProperties.optimalTilingFeatures
            & VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT.rawValue != 0

        var familyCount: UInt32 = 0
        vkGetPhysicalDeviceQueueFamilyProperties(handle, &familyCount, nil)
        var families = [VkQueueFamilyProperties](repeating: VkQueueFamilyProperties(), count: Int(familyCount))
        vkGetPhysicalDeviceQueueFamilyProperties(handle, &familyCount, &families)
        let computeFamily = families.firstIndex { $0.queueFlags & VK_QUEUE_COMPUTE_BIT.rawValue != 0 }
        computeQueueFamily = computeFamily.map(UInt32.init)
        timestampValidBits = computeFamily.map { families[$0].timestampValidBits } ?? 0
        supportsTimestamps = limits.timestampComputeAndGraphics != 0 && timestampValidBits > 0

        // shaderFloat16 lives in VK_KHR_shader_float16_int8 (core in 1.2).
        let extensions = PhysicalDeviceInfo.extensionNames(handle)
        hasFloat16Extension = extensions.contains("VK_KHR_shader_float16_int8")
        supportsSignedZeroInfNanPreserve32 = extensions.contains("VK_KHR_shader_float_controls")
            && PhysicalDeviceInfo.signedZeroInfNanPreserve32(handle)
        supportsCalibratedTimestamps = supportsTimestamps
            && extensions.contains("VK_EXT_calibrated_timestamps")
            && PhysicalDeviceInfo.calibratesWithMonotonicClock(handle, instance: instance)
        var subgroup = VkPhysicalDeviceSubgroupProperties()
        subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES
        withUnsafeMutablePointer(to: &subgroup) { pointer in
            var properties = VkPhysicalDeviceProperties2()
            properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
            properties.pNext = UnsafeMutableRawPointer(pointer)
            vkGetPhysicalDeviceProperties2(handle, &properties)
        }
        subgroupSize = subgroup.subgroupSize
        let wanted = VK_SUBGROUP_FEATURE_BASIC_BIT.rawValue | VK_SUBGROUP_FEATURE_BALLOT_BIT.rawValue
        supportsSubgroupBallot = subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT.rawValue != 0
            && subgroup.supportedOperations & wanted == wanted
        let apiAtLeast12 = (v >> 22 & 0x7F) > 1 || (v >> 12 & 0x3FF) >= 2
        if hasFloat16Extension || apiAtLeast12 {
            var f16 = VkPhysicalDeviceShaderFloat16Int8Features()
            f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES
            supportsFloat16 = withUnsafeMutablePointer(to: &f16) { f16Pointer in
                var features = VkPhysicalDeviceFeatures2()
                features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
                features.pNext = UnsafeMutableRawPointer(f16Pointer)
                vkGetPhysicalDeviceFeatures2(handle, &features)
                return f16Pointer.pointee.shaderFloat16 != 0
            }
        } else {
            supportsFloat16 = false
        }
    }

    private static func signedZeroInfNanPreserve32(_ device: VkPhysicalDevice) -> Bool {
        var controls = VkPhysicalDeviceFloatControlsProperties()
        controls.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES
        return withUnsafeMutablePointer(to: &controls) { pointer in
            var properties = VkPhysicalDeviceProperties2()
            properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
            properties.pNext = UnsafeMutableRawPointer(pointer)
            vkGetPhysicalDeviceProperties2(device, &properties)
            return pointer.pointee.shaderSignedZeroInfNanPreserveFloat32 != 0
        }
    }

    /// Whether the device and `CLOCK_MONOTONIC` are both calibrateable time domains.
    private static func calibratesWithMonotonicClock(_ device: VkPhysicalDevice, instance: VkInstance) -> Bool {
        guard let raw = vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT") else { return false }
        let domainsOf = unsafeBitCast(raw, to: PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT.self)
        var count: UInt32 = 0
        guard domainsOf(device, &count, nil) == VK_SUCCESS, count > 0 else { return false }
        var domains = [VkTimeDomainEXT](repeating: VK_TIME_DOMAIN_DEVICE_EXT, count: Int(count))
        guard domainsOf(device, &count, &domains) == VK_SUCCESS else { return false }
        let found = Set(domains.prefix(Int(count)).map(\.rawValue))
        return found.contains(VK_TIME_DOMAIN_DEVICE_EXT.rawValue) && found.contains(VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT.rawValue)
    }

    private static func extensionNames(_ device: VkPhysicalDevice) -> Set<String> {
        var count: UInt32 = 0
        guard vkEnumerateDeviceExtensionProperties(device, nil, &count, nil) == VK_SUCCESS else { return [] }
        var properties = [VkExtensionProperties](repeating: VkExtensionProperties(), count: Int(count))
        guard vkEnumerateDeviceExtensionProperties(device, nil, &count, &properties) == VK_SUCCESS else { return [] }
        return Set(properties.prefix(Int(count)).map { fixedString($0.extensionName) })
    }

    /// Picks the device to use: `override` (an index or a name
    /// substring) if given, else the most preferred usable kind
    /// (discrete > integrated > virtual > CPU), loader order breaking ties.
    public static func choose(from devices: [PhysicalDeviceInfo],
                              override: String? = nil) throws -> PhysicalDeviceInfo {
        if let override, !override.isEmpty {
            // A number names an index, never a name fragment ("6" must not match "15.0.6").
            let match = if let index = Int(override) {
                devices.first { $0.index == index }
            } else {
                devices.first { $0.name.lowercased().contains(override.lowercased()) }
            }
            guard let match else {
                let list = devices.map { "\($0.index): \($0.name)" }.joined(separator: ", ")
                throw VulkanError.noDevice(
                    "'\(override)' matches no Vulkan device index or name (have: \(list.isEmpty ? "none" : list))")
            }
            guard match.isUsable else {
                throw VulkanError.noDevice(
                    "device \(match.index) (\(match.name)) lacks a compute queue or rgba16f storage images")
            }
            return match
        }
        let usable = devices.filter(\.isUsable)
        guard let best = usable.min(by: { ($0.kind, $0.index) < ($1.kind, $1.index) }) else {
            throw VulkanError.noDevice(devices.isEmpty
                ? "no Vulkan device found (install a driver, e.g. mesa-vulkan-drivers)"
                : "no Vulkan device has a compute queue and rgba16f storage images")
        }
        return best
    }
}
