import Foundation
import Dispatch
import Synchronization

/// The active processors, read once: Foundation re-reads the cgroup CPU
/// limits on every `ProcessInfo.activeProcessorCount` (15 µs measured here),
/// which a small layer cannot afford per call.
let activeProcessorCount = ProcessInfo.processInfo.activeProcessorCount

/// Elements per work item for element-wise kernels: 64K floats is 256 KiB
/// read plus 256 KiB written, small enough to stay in a core's L2 and large
/// enough that taking a chunk costs nothing next to computing it.
let defaultChunkSize = 65_536

/// Runs `body` on consecutive ranges that cover `0..<count`, each at most
/// `chunkSize` long, on up to `threadCount` threads, and returns when all
/// ranges are done. Ranges never overlap; their order across threads is
/// unspecified.
///
/// Workers pull the next chunk from a shared counter instead of taking a
/// fixed share, so a thread slowed by another process (or more threads than
/// cores) does not leave the others idle at the end.
///
/// The calling thread takes chunks too; the others come from
/// ``WorkerPool/shared`` (at most one per active processor, whatever
/// `threadCount` says), whose threads stay awake briefly between calls. A
/// call made while another thread's call holds the pool uses
/// `DispatchQueue.concurrentPerform` instead; a call from inside `body` runs
/// on the calling thread alone.
func forEachChunk(count: Int, chunkSize: Int = defaultChunkSize, threadCount: Int,
                  body: @Sendable (Range<Int>) -> Void) {
    guard count > 0 else { return }
    let chunkSize = max(1, chunkSize)
    let chunkCount = (count - 1) / chunkSize + 1
    let workers = min(max(1, threadCount), chunkCount)
    let chunk = { @Sendable (i: Int) in i * chunkSize..<min(count, (i + 1) * chunkSize) }
    let nested = WorkerPool.isInsideJob
    CPUThreads.record(nested ? 1 : workers)
    guard workers > 1 else {
        // No dispatch at all for one thread: small tensors pay nothing.
        for i in 0..<chunkCount { body(chunk(i)) }
        return
    }
    // Nested inside another chunk: every thread is busy already.
    if nested {
        for i in 0..<chunkCount { body(chunk(i)) }
        return
    }
    if WorkerPool.shared.run(count: count, chunkSize: chunkSize, chunkCount: chunkCount,
                             threadCount: workers, body) {
        return
    }
    // The pool is busy with another thread's call (or has no helpers).
    let next = Atomic<Int>(0)
    DispatchQueue.concurrentPerform(iterations: workers) { _ in
        while true {
            let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
            guard i < chunkCount else { return }
            body(chunk(i))
        }
    }
}

/// A raw pointer handed to worker threads that touch disjoint ranges; the
/// caller keeps the memory alive for the call. (A tensor itself is Sendable:
/// closures that have one capture it instead.)
struct SendablePointer: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer
}
