import CVulkan

/// A storage buffer with its own memory.
///
/// `.shared` and `.constant` buffers are host-visible and coherent
/// (`contents` is mapped for their lifetime); `.private` buffers live in
/// device-local memory, as Metal's storage modes. On a discrete GPU the
/// host-visible memory types differ in where reads are fast, so the two
/// mapped kinds prefer different ones, falling back to any host-visible
/// coherent type.
public final class Buffer: @unchecked Sendable {
    /// Where the buffer's memory lives.
    public enum Storage: Sendable {
        /// Staging, uploads and readback: prefers host-cached memory, which
        /// the CPU reads at memory speed (uncached write-combined memory
        /// reads at a fraction of it: a 268 MB download took a second).
        case shared
        /// Written by the host once, read by kernels many times (weights,
        /// per-layer values): prefers device-local memory the host can map.
        case constant
        /// Device-local, not mapped.
        case `private`
    }

    public let device: Device
    /// Size in bytes.
    public let length: Int
    public let storage: Storage
    /// The mapped memory of a `.shared` or `.constant` buffer; nil for `.private`.
    public let contents: UnsafeMutableRawPointer?
    let handle: VkBuffer
    private let memory: VkDeviceMemory

    /// Makes a buffer of `length` bytes (at least 1).
    public init(device: Device, length: Int, storage: Storage = .shared) throws {
        guard length > 0 else { throw VulkanError.limitExceeded("a buffer must hold at least one byte") }
        self.device = device
        self.length = length
        self.storage = storage
        var info = VkBufferCreateInfo()
        info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO
        info.size = VkDeviceSize(length)
        info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT.rawValue
            | VK_BUFFER_USAGE_TRANSFER_SRC_BIT.rawValue | VK_BUFFER_USAGE_TRANSFER_DST_BIT.rawValue
        info.sharingMode = VK_SHARING_MODE_EXCLUSIVE
        var rollback = Rollback()
        defer { rollback.run() }
        var buffer: VkBuffer?
        try check(vkCreateBuffer(device.handle, &info, nil, &buffer), "vkCreateBuffer(\(length) bytes)")
        guard let buffer else { throw VulkanError.call("vkCreateBuffer", VK_ERROR_OUT_OF_HOST_MEMORY.rawValue) }
        rollback.add { vkDestroyBuffer(device.handle, buffer, nil) }
        var requirements = VkMemoryRequirements()
        vkGetBufferMemoryRequirements(device.handle, buffer, &requirements)
        let mapped = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT.rawValue | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT.rawValue
        let (required, preferred): (UInt32, UInt32) = switch storage {
        case .shared: (mapped, VK_MEMORY_PROPERTY_HOST_CACHED_BIT.rawValue)
        case .constant: (mapped, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT.rawValue)
        case .private: (VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT.rawValue, 0)
        }
        let memory = try device.allocateMemory(requirements, required: required, preferred: preferred)
        rollback.add { vkFreeMemory(device.handle, memory, nil) }
        try check(vkBindBufferMemory(device.handle, buffer, memory, 0), "vkBindBufferMemory")
        var pointer: UnsafeMutableRawPointer?
        if storage != .private {
            try check(vkMapMemory(device.handle, memory, 0, VkDeviceSize(VK_WHOLE_SIZE), 0, &pointer), "vkMapMemory")
        }
        rollback.keep()
        self.handle = buffer
        self.memory = memory
        self.contents = pointer
        device.objectCounter.add(2)
    }

    deinit {
        vkDestroyBuffer(device.handle, handle, nil)
        vkFreeMemory(device.handle, memory, nil)
        device.objectCounter.add(-2)
    }
}
