import Foundation
import Testing
import VulkanCompute
@testable import LayerKit

/// One `Backend` shared by 8 threads, 1,000 runs each, must give bitwise the
/// results of a serial run. On the GPU it also checks that queue submission
/// is serialized: the device is opened with Khronos validation, whose
/// thread-safety checks report unsynchronized use of the queue.
struct ConcurrencyTests {
    static let threadCount = 8
    /// 1,000; `LAYERKIT_CONCURRENCY_RUNS` lowers it for slow instrumented
    /// builds (`make test-tsan` uses 100).
    static let runsPerThread = ProcessInfo.processInfo.environment["LAYERKIT_CONCURRENCY_RUNS"]
        .flatMap(Int.init) ?? 1_000

    /// Small shapes, channels not divisible by 4, batch > 1, a 1x1 image; the
    /// last one is over `defaultChunkSize` floats, so its CPU runs split into
    /// chunks and contend for `WorkerPool.shared` (the rest run inline).
    static let shapes: [[Int]] = [[1, 3, 4, 4], [2, 5, 7, 3], [1, 1, 1, 1], [1, 6, 9, 16], [1, 4, 130, 130]]

    /// Which input run `run` of thread `thread` uses: every thread walks all
    /// shapes in its own order; the large shape is one run in 50.
    static func inputIndex(thread: Int, run: Int) -> Int {
        (run + thread) % 50 == 0 ? shapes.count - 1 : (run + thread) % (shapes.count - 1)
    }

    /// Collects the first mismatches seen by any thread.
    final class Mismatches: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [String] = []
        private(set) var total = 0
        func add(_ line: String) {
            lock.lock(); defer { lock.unlock() }
            total += 1
            if lines.count < 10 { lines.append(line) }
        }
        var first: [String] { lock.lock(); defer { lock.unlock() }; return lines }
        var count: Int { lock.lock(); defer { lock.unlock() }; return total }
    }

    static func check(_ backend: Backend) throws {
        let layer = try Swish(beta: 0.75)
        let inputs = try shapes.enumerated().map { i, shape in
            try Tensor(shape: shape, values: seededUniform(count: try Tensor.elementCount(of: shape),
                                                          in: -12...12, seed: 400 + UInt64(i)))
        }
        // The serial reference: one run per input, on the calling thread.
        let expected = try inputs.map { try backend.run(layer, inputs: [$0]).outputs[0].values }
        let mismatches = Mismatches()
        let group = DispatchGroup()
        for thread in 0..<threadCount {
            group.enter()
            let worker = Thread {
                defer { group.leave() }
                for run in 0..<runsPerThread {
                    let index = inputIndex(thread: thread, run: run)
                    do {
                        let output = try backend.run(layer, inputs: [inputs[index]]).outputs[0]
                        let same = output.count == expected[index].count
                            && zip(output.elements, expected[index]).allSatisfy { $0.bitPattern == $1.bitPattern }
                        if !same { mismatches.add("thread \(thread) run \(run): shape \(shapes[index]) differs") }
                    } catch {
                        mismatches.add("thread \(thread) run \(run): \(error)")
                    }
                }
            }
            worker.stackSize = 1 << 20
            worker.start()
        }
        group.wait()
        #expect(mismatches.count == 0, "\(mismatches.count) bad runs, first: \(mismatches.first)")
    }

    @Test func cpuOnlyBackendSharedByEightThreadsMatchesASerialRun() throws {
        try Self.check(try Backend(computeUnits: .cpuOnly))
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func gpuBackendSharedByEightThreadsMatchesASerialRun() throws {
        // A device of its own, with validation: a validation error (e.g. a
        // THREADING ERROR on the queue) is thrown by the run that sees it.
        let context = try GPUContext(validation: true)
        let backend = try Backend(computeUnits: .gpu, context: context)
        #expect(backend.placement(for: try Swish()) == .gpu)
        try Self.check(backend)
        #expect(context.device.instance.validationErrorCount == 0)
    }
}
