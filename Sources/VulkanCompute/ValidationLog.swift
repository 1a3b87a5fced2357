import CVulkan
import Foundation

/// Collects messages from the Khronos validation layer's debug messenger.
/// Errors are kept until a submission checks them and throws; warnings are
/// counted so tests can assert a clean run.
final class ValidationLog: @unchecked Sendable {
    private let lock = NSLock()
    private var pendingErrors: [String] = []
    private(set) var errorCount = 0
    private(set) var warningCount = 0

    func record(severity: VkDebugUtilsMessageSeverityFlagBitsEXT, message: String) {
        lock.lock(); defer { lock.unlock() }
        if severity.rawValue >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT.rawValue {
            errorCount += 1
            pendingErrors.append(message)
        } else {
            warningCount += 1
        }
    }

    /// Returns and clears the errors recorded since the last call.
    func takeErrors() -> [String] {
        lock.lock(); defer { lock.unlock() }
        defer { pendingErrors.removeAll() }
        return pendingErrors
    }

    /// The C callback Vulkan calls; `userData` is an unretained `ValidationLog`.
    static let callback: PFN_vkDebugUtilsMessengerCallbackEXT = { severity, _, data, userData in
        guard let userData, let data else { return VkBool32(VK_FALSE) }
        let log = Unmanaged<ValidationLog>.fromOpaque(userData).takeUnretainedValue()
        let text = data.pointee.pMessage.map { String(cString: $0) } ?? "(no message)"
        log.record(severity: severity, message: text)
        return VkBool32(VK_FALSE)
    }
}
