import CVulkan

/// Errors from the Vulkan wrapper. Messages name the call and the result
/// code so a user can tell a missing driver from a shader bug.
public enum VulkanError: Error, CustomStringConvertible, Equatable {
    /// A Vulkan call returned an error code.
    case call(String, Int32)
    /// No physical device is usable (or none matched the device override).
    case noDevice(String)
    /// A requested layer, extension or feature is missing.
    case missingFeature(String)
    /// GLSL failed to compile; the message names the shader and line.
    case shaderCompilation(String)
    /// The validation layer reported errors or warnings while the work ran.
    case validation([String])
    /// A fence did not signal within its timeout.
    case timeout(String)
    /// A request exceeds a device limit (the message names the limit).
    case limitExceeded(String)

    public var description: String {
        switch self {
        case .call(let what, let code):
            return "\(what) failed: \(VulkanError.name(of: code))"
        case .noDevice(let m), .missingFeature(let m), .shaderCompilation(let m),
             .timeout(let m), .limitExceeded(let m):
            return m
        case .validation(let messages):
            return "Vulkan validation reported \(messages.count) message(s): "
                + messages.joined(separator: " | ")
        }
    }

    /// The `VK_ERROR_*` name of a result code.
    static func name(of code: Int32) -> String {
        switch VkResult(rawValue: code) {
        case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY"
        case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY"
        case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED"
        case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST"
        case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT"
        case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT"
        case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT"
        case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER (no Vulkan driver found)"
        case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS"
        case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED"
        case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY"
        case VK_TIMEOUT: return "VK_TIMEOUT"
        default: return "VkResult \(code)"
        }
    }
}

/// Throws `VulkanError.call` unless `result` is `VK_SUCCESS`.
@inline(__always)
func check(_ result: VkResult, _ what: @autoclosure () -> String) throws {
    guard result == VK_SUCCESS else { throw VulkanError.call(what(), result.rawValue) }
}
