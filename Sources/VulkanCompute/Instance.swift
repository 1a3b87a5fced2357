import CVulkan
import Foundation

/// The Vulkan instance: loader, optional Khronos validation, and the list of
/// physical devices.
///
/// Validation is on when asked for (`validation: true`). With it,
/// every validation message (error or warning) is collected and thrown by
/// the next `CommandBuffer.waitUntilCompleted()`, so nothing passes with one.
public final class Instance: @unchecked Sendable {
    let handle: VkInstance
    let validationLog = ValidationLog()
    private var messenger: VkDebugUtilsMessengerEXT?
    private let destroyMessenger: PFN_vkDestroyDebugUtilsMessengerEXT?

    /// Whether the Khronos validation layer is enabled.
    public let validationEnabled: Bool
    /// Validation errors seen since creation (thrown as they happen, also counted here).
    public var validationErrorCount: Int { validationLog.errorCount }

    static let validationLayerName = "VK_LAYER_KHRONOS_validation"
    /// Vulkan 1.1: compute with storage images and subgroup basics everywhere.
    static let apiVersion: UInt32 = (1 << 22) | (1 << 12)

    /// Creates an instance, with the Khronos validation layer when `validation`.
    public init(validation: Bool = false) throws {
        let wantValidation = validation
        if wantValidation, !Instance.availableLayers().contains(Instance.validationLayerName) {
            throw VulkanError.missingFeature(
                "validation requested but \(Instance.validationLayerName) is not installed "
                + "(Debian: apt-get install vulkan-validationlayers)")
        }
        validationEnabled = wantValidation

        var layers: [String] = []
        var extensions: [String] = []
        if wantValidation {
            layers.append(Instance.validationLayerName)
            extensions += ["VK_EXT_debug_utils", "VK_EXT_validation_features"]
        }
        // Synchronization validation catches missing barriers, the bug class
        // that lavapipe's serial execution would otherwise hide.
        var enabledFeatures = [VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT]
        var instance: VkInstance?
        let result: VkResult = withCStrings(layers) { layerPointers in
            withCStrings(extensions) { extensionPointers in
                "LayerKit".withCString { appName in
                    var app = VkApplicationInfo()
                    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO
                    app.pApplicationName = appName
                    app.pEngineName = appName
                    app.apiVersion = Instance.apiVersion
                    return withUnsafePointer(to: &app) { appPointer in
                        enabledFeatures.withUnsafeMutableBufferPointer { features in
                            var validationFeatures = VkValidationFeaturesEXT()
                            validationFeatures.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT
                            validationFeatures.enabledValidationFeatureCount = UInt32(features.count)
                            validationFeatures.pEnabledValidationFeatures = UnsafePointer(features.baseAddress)
                            return withUnsafePointer(to: &validationFeatures) { featuresPointer in
                                var info = VkInstanceCreateInfo()
                                info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO
                                info.pNext = wantValidation ? UnsafeRawPointer(featuresPointer) : nil
                                info.pApplicationInfo = appPointer
                                info.enabledLayerCount = UInt32(layers.count)
                                info.ppEnabledLayerNames = layerPointers
                                info.enabledExtensionCount = UInt32(extensions.count)
                                info.ppEnabledExtensionNames = extensionPointers
                                return vkCreateInstance(&info, nil, &instance)
                            }
                        }
                    }
                }
            }
        }
        try check(result, "vkCreateInstance")
        guard let instance else { throw VulkanError.call("vkCreateInstance", VK_ERROR_INITIALIZATION_FAILED.rawValue) }
        handle = instance

        if wantValidation {
            let create = unsafeBitCast(vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"),
                                       to: PFN_vkCreateDebugUtilsMessengerEXT?.self)
            destroyMessenger = unsafeBitCast(vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"),
                                             to: PFN_vkDestroyDebugUtilsMessengerEXT?.self)
            var info = VkDebugUtilsMessengerCreateInfoEXT()
            info.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT
            info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT.rawValue
                | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT.rawValue
            info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT.rawValue
                | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT.rawValue
                | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT.rawValue
            info.pfnUserCallback = ValidationLog.callback
            info.pUserData = Unmanaged.passUnretained(validationLog).toOpaque()
            var messenger: VkDebugUtilsMessengerEXT?
            if let create {
                try check(create(instance, &info, nil, &messenger), "vkCreateDebugUtilsMessengerEXT")
            }
            self.messenger = messenger
        } else {
            destroyMessenger = nil
        }
    }

    deinit {
        if let messenger, let destroyMessenger { destroyMessenger(handle, messenger, nil) }
        vkDestroyInstance(handle, nil)
    }

    /// Every physical device the loader reports, in loader order.
    public func physicalDevices() throws -> [PhysicalDeviceInfo] {
        var count: UInt32 = 0
        try check(vkEnumeratePhysicalDevices(handle, &count, nil), "vkEnumeratePhysicalDevices")
        var devices = [VkPhysicalDevice?](repeating: nil, count: Int(count))
        try check(vkEnumeratePhysicalDevices(handle, &count, &devices), "vkEnumeratePhysicalDevices")
        return devices.prefix(Int(count)).enumerated().compactMap { index, device in
            device.map { PhysicalDeviceInfo(index: index, handle: $0, instance: handle) }
        }
    }

    /// Returns and clears the validation errors recorded since the last call.
    func takeValidationErrors() -> [String] { validationLog.takeErrors() }

    private static func availableLayers() -> Set<String> {
        var count: UInt32 = 0
        guard vkEnumerateInstanceLayerProperties(&count, nil) == VK_SUCCESS else { return [] }
        var properties = [VkLayerProperties](repeating: VkLayerProperties(), count: Int(count))
        guard vkEnumerateInstanceLayerProperties(&count, &properties) == VK_SUCCESS else { return [] }
        return Set(properties.prefix(Int(count)).map { fixedString($0.layerName) })
    }
}

/// Calls `body` with a C array of C strings that live for the call.
func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
    let duplicated = strings.map { UnsafePointer(strdup($0)) }
    defer { duplicated.forEach { free(UnsafeMutableRawPointer(mutating: $0)) } }
    return duplicated.withUnsafeBufferPointer { body($0.baseAddress) }
}

/// Reads a fixed-size C char array (a tuple in Swift) as a String.
func fixedString<T>(_ tuple: T) -> String {
    withUnsafeBytes(of: tuple) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
}
