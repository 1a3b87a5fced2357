import Foundation
internal import VulkanCompute

/// Vulkan images of slice images that died, kept for the next slice image
/// of the same extent, as `StagingPool` keeps staging buffers: a training
/// step makes the same images as the step before it (its one-layer plans,
/// the weights of the layers rebuilt with new parameters), and takes them
/// from here instead of creating them again.
///
/// An image is handed out only when the pool holds its last reference: a
/// command buffer still running retains the images it uses, so one given
/// back while its work is in flight waits here until that work completes.
/// At most `maxIdleBytes` of idle images stay; past that the least
/// recently returned go. Thread-safe.
final class ImagePool: @unchecked Sendable {
    let device: Device
    /// The most bytes idle images may hold together.
    let maxIdleBytes: Int
    private let lock = NSLock()
    /// Idle images, least recently returned first.
    private var idle: [Image] = []
    private var idleBytes = 0

    init(device: Device, maxIdleBytes: Int) {
        self.device = device
        self.maxIdleBytes = maxIdleBytes
    }

    /// An idle image of this extent that nothing else references, if any.
    func take(width: Int, height: Int, layers: Int) -> Image? {
        lock.lock(); defer { lock.unlock() }
        for i in idle.indices.reversed()
        where idle[i].width == width && idle[i].height == height && idle[i].layers == layers {
            guard isKnownUniquelyReferenced(&idle[i]) else { continue }
            idleBytes -= Self.bytes(idle[i])
            return idle.remove(at: i)
        }
        return nil
    }

    /// Keeps `image` for reuse (a slice image gives back its texture when it dies).
    func giveBack(_ image: Image) {
        let bytes = Self.bytes(image)
        guard bytes <= maxIdleBytes else { return }
        var evicted: [Image] = []
        lock.lock()
        idle.append(image)
        idleBytes += bytes
        while idleBytes > maxIdleBytes {
            let oldest = idle.removeFirst()
            idleBytes -= Self.bytes(oldest)
            evicted.append(oldest)
        }
        lock.unlock()
        // Destroyed here, outside the lock.
        evicted.removeAll()
    }

    private static func bytes(_ image: Image) -> Int { image.width * image.height * image.layers * Image.bytesPerTexel }
}
