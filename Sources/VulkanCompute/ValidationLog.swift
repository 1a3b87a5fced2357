import CVulkan
import Foundation

/// Collects messages from the Khronos validation layer's debug messenger.
/// Errors are kept until a submission checks them and throws; warnings are
/// printed on stderr and counted.
final class ValidationLog: @unchecked Sendable {
    private let lock = NSLock()
    private var pendingErrors: [String] = []
    private var errors = 0
    private var warnings = 0

    /// Errors seen so far; read under the lock, as the messenger writes it
    /// from whichever thread made the Vulkan call.
    var errorCount: Int { lock.lock(); defer { lock.unlock() }; return errors }
    /// Warnings seen so far.
    var warningCount: Int { lock.lock(); defer { lock.unlock() }; return warnings }

    func record(severity: VkDebugUtilsMessageSeverityFlagBitsEXT, message: String) {
        lock.lock(); defer { lock.unlock() }
        if severity.rawValue >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT.rawValue {
            errors += 1
            pendingErrors.append(message)
        } else {
            // Warnings do not fail the work, so they are shown as they come.
            warnings += 1
            FileHandle.standardError.write(Data("layerkit: Vulkan validation warning: \(message)\n".utf8))
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
