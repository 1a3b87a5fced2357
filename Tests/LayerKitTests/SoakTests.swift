import Foundation
import Testing
import VulkanCompute
@testable import LayerKit

/// Many GPU dispatches of mixed sizes leak nothing: after a warm-up pass over
/// the same sizes (which fills the staging pool with one buffer per size and
/// creates the pipeline), the device's live Vulkan objects, the staging
/// allocations and the resident memory stay flat.
///
/// 10,000 dispatches (3.6 s alone on lavapipe here); `LAYERKIT_SOAK_DISPATCHES`
/// changes that. `make soak` runs this test alone in its process
/// (`LAYERKIT_SOAK_ALONE=1`), where the resident-memory bound is tight.
struct SoakTests {
    /// Mixed sizes: odd channel counts, batch > 1, 1x1, a few KB to ~1 MB of fp16.
    static let shapes: [[Int]] = [
        [1, 3, 8, 8], [2, 5, 7, 3], [1, 1, 1, 1], [1, 16, 32, 32], [3, 7, 13, 11],
        [1, 4, 64, 64], [1, 9, 5, 40], [1, 2, 128, 96],
    ]

    static var dispatches: Int {
        ProcessInfo.processInfo.environment["LAYERKIT_SOAK_DISPATCHES"].flatMap(Int.init) ?? 10_000
    }

    /// How much resident memory may grow from the end of the warm-up to the
    /// end of the soak. Alone in its process (`make soak`): 8 MiB, under one
    /// KiB per dispatch over 10,000. Inside the whole suite other tests
    /// allocate in the same process meanwhile (8 threads of ConcurrencyTests
    /// alone moved it 58 MiB once, the whole suite 193 MiB), so there the bound
    /// is a guard against gross leaks only (512 MiB); the exact checks are the object and staging counts.
    static var residentGrowthBound: Int {
        ProcessInfo.processInfo.environment["LAYERKIT_SOAK_ALONE"] == "1" ? 8 << 20 : 512 << 20
    }

    /// Whether this process runs under AddressSanitizer or ThreadSanitizer,
    /// whose quarantine and shadow memory grow the resident set by design
    /// (ASan holds up to 256 MiB of freed blocks); there LeakSanitizer, not
    /// RSS, checks for leaks.
    static let isSanitized = dlsym(nil, "__asan_init") != nil || dlsym(nil, "__tsan_init") != nil

    /// The resident set size of this process, from `/proc/self/statm`.
    static func residentBytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func mixedSizeDispatchesKeepObjectsAndMemoryFlat() throws {
        // A device of its own, so no other test's objects move the count;
        // no validation, whose own bookkeeping grows with the work.
        let context = try GPUContext(validation: false)
        let backend = try Backend(computeUnits: .gpu, context: context)
        let layer = try Swish(beta: 1.25)
        let inputs = try Self.shapes.enumerated().map { i, shape in
            try Tensor(shape: shape, values: seededUniform(count: try Tensor.elementCount(of: shape),
                                                          in: -8...8, seed: 900 + UInt64(i)))
        }
        for input in inputs { _ = try backend.run(layer, inputs: [input]) }
        let objectsAfterWarmUp = context.device.liveObjectCount
        let stagingAfterWarmUp = context.stagingBufferAllocations
        let residentAfterWarmUp = Self.residentBytes()

        let start = Date()
        var objectsMidway = 0
        for i in 0..<Self.dispatches {
            let run = try backend.run(layer, inputs: [inputs[i % inputs.count]])
            #expect(run.placement == .gpu)
            if i == Self.dispatches / 2 { objectsMidway = context.device.liveObjectCount }
        }
        let seconds = Date().timeIntervalSince(start)
        let objectsAtEnd = context.device.liveObjectCount
        let residentAtEnd = Self.residentBytes()
        let mib = { (bytes: Int?) in bytes.map { String(format: "%.1f MiB", Double($0) / 1048576) } ?? "?" }
        print("soak: \(Self.dispatches) dispatches in \(String(format: "%.1f", seconds)) s; live Vulkan objects "
              + "\(objectsAfterWarmUp) after warm-up, \(objectsAtEnd) at end; staging buffers "
              + "\(stagingAfterWarmUp) → \(context.stagingBufferAllocations); RSS \(mib(residentAfterWarmUp)) "
              + "→ \(mib(residentAtEnd))")

        #expect(objectsMidway == objectsAfterWarmUp)
        #expect(objectsAtEnd == objectsAfterWarmUp)
        #expect(context.stagingBufferAllocations == stagingAfterWarmUp)
        if let before = residentAfterWarmUp, let after = residentAtEnd, !Self.isSanitized {
            #expect(after - before <= Self.residentGrowthBound,
                    "resident memory grew \(mib(after - before)) over \(Self.dispatches) dispatches")
        }
    }
}
