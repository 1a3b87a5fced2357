#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The host memory of a plan's intermediate values: one 64-byte-aligned
/// allocation made at prepare, with every value a CPU step writes (or a
/// download lands in) at an offset planned by liveness, as ncnn's and
/// TFLite's arena planners do. Values whose host lifetimes do not overlap
/// share bytes; a run reuses the same views, so it allocates no tensor.
///
/// Graph outputs never live here: they are handed to the caller, so they go
/// into the caller's tensors (`Model.predict(inputs:into:)`) or fresh ones.
///
/// Why: a new tensor per value per run paid an allocation, a zero fill and,
/// for large values, fresh pages faulted in on every run. Measured with
/// `layerkit profile MODEL --backend cpu` (torchvision exports, 1 and 2
/// threads, load average 11-12, so noisy): "host work between the recorded
/// steps" went from 1.8-23 ms to 0.22-0.28 ms on resnet18 and from 0.9-4.7
/// ms to 0.13-0.22 ms on mobilenet_v2; resnet18's Relus, now in place in
/// warm memory, from 2.9-6.6 ms to 0.44-0.46 ms in all (2 threads).
final class HostArena {
    /// The plan's values' views, per value (nil: not in the arena).
    private(set) var views: [Tensor?] = []
    /// The bytes of the allocation.
    let byteCount: Int
    private let storage: Storage

    /// The allocation, freed when the arena and the last of its views are
    /// gone. The views keep this alive, not the arena, which holds them:
    /// views owning the arena were a cycle that leaked every plan's arena.
    private final class Storage {
        let base: UnsafeMutableRawPointer
        init(_ base: UnsafeMutableRawPointer) { self.base = base }
        deinit { free(base) }
    }

    /// One value's claim on the arena: the steps from the one that writes
    /// it on the host to the last that reads it, both included.
    struct Lifetime {
        let value: Int
        let first: Int
        let last: Int
        let bytes: Int
    }

    /// Allocates `byteCount` bytes (64-byte aligned, NaN-filled when
    /// `poisoned`, else zero) and makes a view for each value of `offsets`.
    /// Throws, as `Tensor.init` does, when the memory is refused.
    init(byteCount: Int, offsets: [Int?], shapes: [[Int]], poisoned: Bool) throws {
        let bytes = max(byteCount, 64)
        guard UInt64(bytes) <= ProcessInfo.processInfo.physicalMemory else {
            throw LayerKitError.shapeMismatch("the model's intermediate values need \(bytes >> 20) MiB at once, more "
                                              + "than this machine's \(ProcessInfo.processInfo.physicalMemory >> 20) MiB")
        }
        var raw: UnsafeMutableRawPointer?
        guard posix_memalign(&raw, 64, bytes) == 0, let raw else {
            throw LayerKitError.shapeMismatch("cannot allocate \(bytes >> 20) MiB for the model's intermediate values: "
                                              + "the system refused the memory")
        }
        let storage = Storage(raw)
        self.storage = storage
        self.byteCount = bytes
        let floats = raw.bindMemory(to: Float.self, capacity: bytes / 4)
        floats.initialize(repeating: poisoned ? .nan : 0, count: bytes / 4)
        Tensor.allocationCounter?.record(bytes: bytes)
        views = try zip(offsets, shapes).map { offset, shape in
            try offset.map { try Tensor(viewing: floats + $0 / 4, shape: shape, owner: storage) }
        }
    }

    /// Fills the arena with NaN (tests: a layer that reads an output
    /// before writing it, or a value read after its bytes were reused,
    /// then shows as NaN rather than as a lucky zero).
    func poison() {
        storage.base.bindMemory(to: Float.self, capacity: byteCount / 4).update(repeating: .nan, count: byteCount / 4)
    }

    /// Offsets for `lifetimes` (64-byte multiples) and the bytes they
    /// span, greedy by size as TFLite's planner: largest first, each at
    /// the lowest offset clear of every placed value whose lifetime
    /// overlaps its own. `sharing` lists pairs (input, output) of an
    /// in-place step: the output takes the input's bytes, so they are
    /// placed as one claim spanning both lifetimes.
    static func offsets(for lifetimes: [Lifetime], sharing: [(Int, Int)], valueCount: Int)
        -> (offsets: [Int?], bytes: Int) {
        // Claims: each value its own, merged along in-place chains.
        var claimOf = Array(repeating: -1, count: valueCount)
        var claims: [(first: Int, last: Int, bytes: Int, values: [Int])] = []
        for lifetime in lifetimes {
            claimOf[lifetime.value] = claims.count
            claims.append((lifetime.first, lifetime.last, roundUp(lifetime.bytes), [lifetime.value]))
        }
        for (input, output) in sharing {
            let a = claimOf[input], b = claimOf[output]
            guard a >= 0, b >= 0, a != b else { continue }
            claims[a] = (min(claims[a].first, claims[b].first), max(claims[a].last, claims[b].last),
                         max(claims[a].bytes, claims[b].bytes), claims[a].values + claims[b].values)
            for v in claims[b].values { claimOf[v] = a }
            claims[b].values = []
        }
        let order = claims.indices.filter { !claims[$0].values.isEmpty }
            .sorted { (claims[$0].bytes, claims[$1].first) > (claims[$1].bytes, claims[$0].first) }
        var placed: [(first: Int, last: Int, offset: Int, bytes: Int)] = []
        var offsets = [Int?](repeating: nil, count: valueCount)
        var total = 0
        for c in order {
            let claim = claims[c]
            let overlapping = placed.filter { $0.first <= claim.last && claim.first <= $0.last }
                .sorted { $0.offset < $1.offset }
            var offset = 0
            for other in overlapping {
                if offset + claim.bytes <= other.offset { break }
                offset = max(offset, other.offset + other.bytes)
            }
            placed.append((claim.first, claim.last, offset, claim.bytes))
            for v in claim.values { offsets[v] = offset }
            total = max(total, offset + claim.bytes)
        }
        return (offsets, total)
    }

    private static func roundUp(_ bytes: Int) -> Int { (max(bytes, 1) + 63) / 64 * 64 }
}
