import Foundation
internal import VulkanCompute

/// GPU resources that died, kept for the next request they fit: the one
/// keeping policy of the context's pools (`StagingPool`'s buffers,
/// `ImagePool`'s images).
///
/// A resource is handed out only when the pool holds its last reference: a
/// command buffer still running retains what it uses, so one given back
/// while its work is in flight waits here until that work completes. At
/// most `maxIdleBytes` stay idle; past that the least recently returned
/// go. Thread-safe.
final class IdleResources<Resource: AnyObject>: @unchecked Sendable {
    /// The most bytes idle resources may hold together.
    let maxIdleBytes: Int
    private let bytes: (Resource) -> Int
    private let lock = NSLock()
    /// Idle resources, least recently returned first.
    private var idle: [Resource] = []
    private var idleBytes = 0

    init(maxIdleBytes: Int, bytes: @escaping (Resource) -> Int) {
        self.maxIdleBytes = maxIdleBytes
        self.bytes = bytes
    }

    /// The most recently returned idle resource that `fits` and nothing
    /// else references, if any.
    func take(where fits: (Resource) -> Bool) -> Resource? {
        lock.lock(); defer { lock.unlock() }
        for i in idle.indices.reversed() where fits(idle[i]) {
            guard isKnownUniquelyReferenced(&idle[i]) else { continue }
            idleBytes -= bytes(idle[i])
            return idle.remove(at: i)
        }
        return nil
    }

    /// Keeps `resource` for reuse (one larger than `maxIdleBytes` goes at once).
    func giveBack(_ resource: Resource) {
        let size = bytes(resource)
        guard size <= maxIdleBytes else { return }
        var evicted: [Resource] = []
        lock.lock()
        idle.append(resource)
        idleBytes += size
        while idleBytes > maxIdleBytes {
            let oldest = idle.removeFirst()
            idleBytes -= bytes(oldest)
            evicted.append(oldest)
        }
        lock.unlock()
        // Destroyed here, outside the lock.
        evicted.removeAll()
    }
}

/// The textures of slice images that died, kept for the next slice image of
/// the same extent: a training step makes the same images as the step
/// before it (its one-layer plans, the weights of the layers rebuilt with
/// new parameters), and takes them from here instead of creating them again.
typealias ImagePool = IdleResources<Image>

extension IdleResources where Resource == Image {
    convenience init(maxIdleBytes: Int) {
        self.init(maxIdleBytes: maxIdleBytes) { $0.width * $0.height * $0.layers * Image.bytesPerTexel }
    }

    /// An idle image of this extent that nothing else references, if any.
    func take(width: Int, height: Int, layers: Int) -> Image? {
        take { $0.width == width && $0.height == height && $0.layers == layers }
    }
}
