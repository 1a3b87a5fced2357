import CVulkan
import Foundation

/// Collects messages from the Khronos validation layer's debug messenger.
/// Every message, warning or error, is kept until the next submission checks
/// them and throws: with validation on, the target is zero messages.
final class ValidationLog: @unchecked Sendable {
    private let lock = NSLock()
    private var pendingErrors: [String] = []
    private var errors = 0

    /// Errors seen so far; read under the lock, as the messenger writes it
    /// from whichever thread made the Vulkan call.
    var errorCount: Int { lock.lock(); defer { lock.unlock() }; return errors }

    func record(severity: VkDebugUtilsMessageSeverityFlagBitsEXT, message: String) {
        lock.lock(); defer { lock.unlock() }
        if severity.rawValue >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT.rawValue {
            errors += 1
            pendingErrors.append("error: " + message)
        } else {
            pendingErrors.append("warning: " + message)
        }
    }

    /// Returns and clears the messages recorded since the last call.
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
