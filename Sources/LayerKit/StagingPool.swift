import Foundation
import VulkanCompute

/// Host-visible staging buffers kept for reuse, keyed by exact length.
///
/// A fresh 8 MiB mapping costs more than the copy into it (on lavapipe the
/// first touch of each page faults, and freeing unmaps it again), so uploads
/// and downloads take a buffer here and give it back once their command
/// buffer has completed. A buffer is never handed out twice at once. At most
/// `maxIdleBytes` stay idle; past that the least recently returned go.
/// Thread-safe.
final class StagingPool: @unchecked Sendable {
    let device: Device
    /// The most bytes idle buffers may hold together.
    let maxIdleBytes: Int
    private let lock = NSLock()
    /// Idle buffers, least recently returned first.
    private var idle: [Buffer] = []
    private var idleBytes = 0
    private var created = 0

    init(device: Device, maxIdleBytes: Int) {
        self.device = device
        self.maxIdleBytes = maxIdleBytes
    }

    /// How many buffers the pool has allocated in its lifetime.
    var allocationCount: Int { lock.lock(); defer { lock.unlock() }; return created }

    /// An idle buffer of exactly `length` bytes, or a new one.
    func take(length: Int) throws -> Buffer {
        lock.lock()
        if let i = idle.lastIndex(where: { $0.length == length }) {
            let buffer = idle.remove(at: i)
            idleBytes -= buffer.length
            lock.unlock()
            return buffer
        }
        created += 1
        lock.unlock()
        return try Buffer(device: device, length: length)
    }

    /// Makes `buffer` available again; the GPU must be done with it.
    func giveBack(_ buffer: Buffer) {
        guard buffer.length <= maxIdleBytes else { return }
        var evicted: [Buffer] = []
        lock.lock()
        idle.append(buffer)
        idleBytes += buffer.length
        while idleBytes > maxIdleBytes {
            let oldest = idle.removeFirst()
            idleBytes -= oldest.length
            evicted.append(oldest)
        }
        lock.unlock()
        // Freed here, outside the lock.
        evicted.removeAll()
    }
}
