import Foundation
internal import VulkanCompute

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
    /// The memory its buffers take (`Buffer.Storage`).
    let storage: Buffer.Storage
    /// The most bytes idle buffers may hold together.
    let maxIdleBytes: Int
    /// Bytes of canary (`guardByte`) each buffer carries past the length it
    /// is taken for; 0 outside tests. Returned buffers whose canary changed
    /// count as `overruns`: an upload or download that wrote past its length.
    let guardBytes: Int
    static let guardByte: UInt8 = 0xA5
    private var overrunCount = 0
    private let lock = NSLock()
    private let idle: IdleResources<Buffer>
    private var created = 0

    init(device: Device, maxIdleBytes: Int, guardBytes: Int = 0, storage: Buffer.Storage = .shared) {
        self.device = device
        self.storage = storage
        self.maxIdleBytes = maxIdleBytes
        idle = IdleResources(maxIdleBytes: maxIdleBytes) { $0.length }
        self.guardBytes = guardBytes
    }

    /// How many buffers the pool has allocated in its lifetime.
    var allocationCount: Int { lock.lock(); defer { lock.unlock() }; return created }

    /// How many returned buffers had their guard bytes overwritten.
    var overruns: Int { lock.lock(); defer { lock.unlock() }; return overrunCount }

    /// An idle buffer of exactly `length` bytes (plus `guardBytes`), or a new one.
    func take(length: Int) throws -> Buffer {
        // One a command buffer still retains (given back by a `GPUBuffer`
        // while its work ran) is skipped: the GPU may still read it.
        if let buffer = idle.take(where: { $0.length == length + guardBytes }) { return buffer }
        lock.lock()
        created += 1
        lock.unlock()
        let buffer = try Buffer(device: device, length: length + guardBytes, storage: storage)
        buffer.contents?.advanced(by: length).initializeMemory(as: UInt8.self, repeating: StagingPool.guardByte,
                                                               count: guardBytes)
        return buffer
    }

    /// Makes sure idle buffers of `lengths` exist (one per entry), so that
    /// transfers of those lengths allocate nothing: a plan's prepare step.
    func reserve(lengths: [Int]) throws {
        let buffers = try lengths.map { try take(length: $0) }
        buffers.forEach(giveBack)
    }

    /// Makes `buffer` available again; the GPU must be done with it.
    func giveBack(_ buffer: Buffer) {
        let overrun = guardBytes > 0 && buffer.contents.map { contents in
            let tail = UnsafeRawBufferPointer(start: contents + (buffer.length - guardBytes), count: guardBytes)
            return tail.contains { $0 != StagingPool.guardByte }
        } == true
        guard !overrun else {
            lock.lock(); overrunCount += 1; lock.unlock()
            return
        }
        idle.giveBack(buffer)
    }
}
