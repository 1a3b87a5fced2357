import Synchronization

/// What a `GPUContext` has done beyond its kernels: the device objects it
/// created (slice images; buffers: weights, staging, optimizer state) and
/// the bytes it moved between host and device. Read `GPUContext.counts`
/// before and after some work and subtract: a training step reports its
/// own this way (`UpdateTask.lastStep`).
///
/// Only creations count as allocations: an image or buffer taken again
/// from the context's pools (`ImagePool`, `StagingPool`) is not one.
/// Bytes are those that cross: an image upload or download moves its fp16
/// texels (8 bytes a texel), a buffer's Float32 values move 4 bytes each.
public struct GPUCounts: Sendable, Equatable, CustomStringConvertible {
    /// Slice images created.
    public var imagesCreated = 0
    /// Buffers created (weights, staging and per-dispatch data, optimizer state).
    public var buffersCreated = 0
    /// Bytes copied from the host to the device.
    public var bytesUploaded = 0
    /// Bytes copied from the device to the host.
    public var bytesDownloaded = 0

    public init(imagesCreated: Int = 0, buffersCreated: Int = 0, bytesUploaded: Int = 0, bytesDownloaded: Int = 0) {
        (self.imagesCreated, self.buffersCreated) = (imagesCreated, buffersCreated)
        (self.bytesUploaded, self.bytesDownloaded) = (bytesUploaded, bytesDownloaded)
    }

    /// Images and buffers created.
    public var allocations: Int { imagesCreated + buffersCreated }

    /// What happened between two readings (`later - earlier`).
    public static func - (later: GPUCounts, earlier: GPUCounts) -> GPUCounts {
        GPUCounts(imagesCreated: later.imagesCreated - earlier.imagesCreated,
                  buffersCreated: later.buffersCreated - earlier.buffersCreated,
                  bytesUploaded: later.bytesUploaded - earlier.bytesUploaded,
                  bytesDownloaded: later.bytesDownloaded - earlier.bytesDownloaded)
    }

    /// `3 allocations (1 image, 2 buffers), 1.20 MB up, 0.40 MB down`.
    public var description: String {
        let megabytes = { (bytes: Int) in String(format: "%.2f MB", Double(bytes) / 1e6) }
        return "\(allocations) allocations (\(imagesCreated) image\(imagesCreated == 1 ? "" : "s"), \(buffersCreated) "
            + "buffer\(buffersCreated == 1 ? "" : "s")), \(megabytes(bytesUploaded)) up, \(megabytes(bytesDownloaded)) down"
    }
}

/// The running totals behind `GPUContext.counts`; thread-safe (relaxed
/// atomics: each total is exact, a reading during work may be mid-way).
final class GPUCounters: Sendable {
    private let images = Atomic<Int>(0)
    private let buffers = Atomic<Int>(0)
    private let uploaded = Atomic<Int>(0)
    private let downloaded = Atomic<Int>(0)

    func imageCreated() { images.add(1, ordering: .relaxed) }
    func bufferCreated() { buffers.add(1, ordering: .relaxed) }
    func upload(bytes: Int) { uploaded.add(bytes, ordering: .relaxed) }
    func download(bytes: Int) { downloaded.add(bytes, ordering: .relaxed) }

    /// The totals, with `pooled` buffers created by the pools (they count their own).
    func counts(pooled: Int) -> GPUCounts {
        GPUCounts(imagesCreated: images.load(ordering: .relaxed), buffersCreated: pooled + buffers.load(ordering: .relaxed),
                  bytesUploaded: uploaded.load(ordering: .relaxed), bytesDownloaded: downloaded.load(ordering: .relaxed))
    }
}
