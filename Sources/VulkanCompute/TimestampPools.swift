import CVulkan
import Foundation

/// The device's timestamp query pools, reused from one command buffer to the
/// next: a buffer that records timestamps takes one and gives it back once
/// the GPU is done with it. Profiled runs record timestamps in every buffer,
/// so creating and destroying a pool per buffer, on several threads at once,
/// churned driver objects (and the validation layer's tracking of them) on
/// every run. Each buffer resets the pool it takes before its first mark.
final class TimestampPools: @unchecked Sendable {
    /// The queries in each pool: `CommandBuffer.maxTimestamps`.
    let queryCount: Int
    private let device: VkDevice
    private let counter: LiveObjectCounter
    private let lock = NSLock()
    private var free: [VkQueryPool] = []

    init(device: VkDevice, counter: LiveObjectCounter, queryCount: Int) {
        self.device = device
        self.counter = counter
        self.queryCount = queryCount
    }

    /// A free pool, or a new one; it is the caller's until `giveBack`.
    func take() throws -> VkQueryPool {
        lock.lock()
        if let pool = free.popLast() {
            lock.unlock()
            return pool
        }
        lock.unlock()
        var info = VkQueryPoolCreateInfo()
        info.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO
        info.queryType = VK_QUERY_TYPE_TIMESTAMP
        info.queryCount = UInt32(queryCount)
        var pool: VkQueryPool?
        try check(vkCreateQueryPool(device, &info, nil, &pool), "vkCreateQueryPool")
        guard let pool else { throw VulkanError.call("vkCreateQueryPool", -1) }
        counter.add(1)
        return pool
    }

    /// Returns `pool`, which no pending GPU work may still write.
    func giveBack(_ pool: VkQueryPool) {
        lock.lock(); free.append(pool); lock.unlock()
    }

    /// Destroys the free pools: called by the device before it is destroyed,
    /// when no command buffer holds one any more.
    func destroyAll() {
        lock.lock(); defer { lock.unlock() }
        for pool in free { vkDestroyQueryPool(device, pool, nil) }
        counter.add(-free.count)
        free.removeAll()
    }
}
