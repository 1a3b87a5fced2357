import Dispatch
import Foundation
import Synchronization
import Testing
@testable import LayerKit

/// Per-index hit counters that many threads bump at once.
private final class Hits: @unchecked Sendable {
    // Atomic is not copyable, so the counters live in a fixed buffer.
    private let buffer: UnsafeMutableBufferPointer<Atomic<Int>>

    init(_ count: Int) {
        buffer = .allocate(capacity: count)
        for i in 0..<count { (buffer.baseAddress! + i).initialize(to: Atomic(0)) }
    }

    deinit {
        buffer.baseAddress!.deinitialize(count: buffer.count)
        buffer.deallocate()
    }

    func hit(_ range: Range<Int>) {
        for i in range { buffer[i].wrappingAdd(1, ordering: .relaxed) }
    }

    /// The indices not hit exactly once (at most 5 of them).
    var wrong: [Int] {
        Array((0..<buffer.count).filter { buffer[$0].load(ordering: .relaxed) != 1 }.prefix(5))
    }
}

/// Chunks of `count` that `chunkSize` makes, as forEachChunk computes them.
private func chunks(_ count: Int, _ chunkSize: Int) -> Int { (count - 1) / chunkSize + 1 }

/// Polls `condition` every millisecond for up to `seconds`.
private func eventually(within seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}

// Serialized: the parking checks want the machine's cores to themselves.
@Suite(.serialized) struct WorkerPoolTests {
    @Test(arguments: [1, 2, 3, 4, 8])
    func eachRunHitsEveryIndexExactlyOnce(threads: Int) {
        let pool = WorkerPool(threadCount: threads, spinMicroseconds: 20)
        defer { pool.stop() }
        for count in [1, 2, 7, 63, 64, 65, 1000, 4099] {
            for chunkSize in [1, 3, 64, 1000, 5000] {
                for threadCount in [1, 2, threads, 16] {
                    let hits = Hits(count)
                    let done = pool.run(count: count, chunkSize: chunkSize,
                                        chunkCount: chunks(count, chunkSize),
                                        threadCount: threadCount) { hits.hit($0) }
                    #expect(done)
                    #expect(hits.wrong.isEmpty,
                            "count \(count) chunk \(chunkSize) threads \(threadCount): \(hits.wrong)")
                }
            }
        }
    }

    @Test func forEachChunkCoversManyShapes() {
        for count in [1, 5, 64, 100, 65_537, 200_000] {
            for chunkSize in [1, 7, 4096, 65_536] where count / chunkSize < 50_000 {
                for threads in [1, 2, 3, 8] {
                    let hits = Hits(count)
                    forEachChunk(count: count, chunkSize: chunkSize, threadCount: threads) { hits.hit($0) }
                    #expect(hits.wrong.isEmpty, "count \(count) chunk \(chunkSize) threads \(threads)")
                }
            }
        }
    }

    @Test func helpersRunChunksAlongsideTheCaller() {
        // Two chunks that each wait until both have started: only finishes
        // (without the timeout) if a helper runs one while the caller runs
        // the other.
        let pool = WorkerPool(threadCount: 2, spinMicroseconds: 0)
        defer { pool.stop() }
        for _ in 0..<20 {
            let started = Atomic<Int>(0)
            let bothRan = Atomic<Bool>(false)
            let done = pool.run(count: 2, chunkSize: 1, chunkCount: 2, threadCount: 2) { _ in
                started.wrappingAdd(1, ordering: .relaxed)
                let deadline = Date().addingTimeInterval(5)
                while started.load(ordering: .relaxed) < 2 && Date() < deadline { usleep(100) }
                if started.load(ordering: .relaxed) == 2 { bothRan.store(true, ordering: .relaxed) }
            }
            #expect(done)
            let bothRanValue = bothRan.load(ordering: .relaxed)
            #expect(bothRanValue)
        }
    }

    @Test func callerWaitsForASlowHelper() {
        // The caller's chunk holds on until the helper has started the other
        // one, which then outlasts the caller's (zero) poll: the caller
        // blocks, and the helper must wake it.
        let pool = WorkerPool(threadCount: 2, spinMicroseconds: 0)
        defer { pool.stop() }
        for _ in 0..<10 {
            let caller = pthread_self()
            let started = Atomic<Int>(0)
            let hits = Hits(2)
            let done = pool.run(count: 2, chunkSize: 1, chunkCount: 2, threadCount: 2) { range in
                started.wrappingAdd(1, ordering: .relaxed)
                if pthread_equal(pthread_self(), caller) == 0 {
                    usleep(5000)
                } else {
                    let deadline = Date().addingTimeInterval(5)
                    while started.load(ordering: .relaxed) < 2 && Date() < deadline { usleep(50) }
                }
                hits.hit(range)
            }
            #expect(done)
            #expect(hits.wrong.isEmpty)
        }
    }

    @Test func concurrentCallersFromEightThreads() {
        // Each thread calls forEachChunk over its own counters; one of them
        // at a time gets the pool, the rest fall back, and none may lose or
        // repeat a chunk.
        let failures = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { t in
            for round in 0..<100 {
                let count = 1000 + 37 * t + round
                let hits = Hits(count)
                forEachChunk(count: count, chunkSize: 1 + (t + round) % 50, threadCount: 2 + t % 3) {
                    hits.hit($0)
                }
                if !hits.wrong.isEmpty { failures.wrappingAdd(1, ordering: .relaxed) }
            }
        }
        let failuresValue = failures.load(ordering: .relaxed)
        #expect(failuresValue == 0)
    }

    @Test func concurrentCallersOnOnePool() {
        // Direct pool calls from 8 threads: a busy pool refuses (returns
        // false) and runs nothing; an accepted run covers everything.
        let pool = WorkerPool(threadCount: 3, spinMicroseconds: 20)
        defer { pool.stop() }
        let failures = Atomic<Int>(0)
        let accepted = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { t in
            for round in 0..<200 {
                let count = 500 + t + round
                let hits = Hits(count)
                let chunkSize = 1 + round % 20
                if pool.run(count: count, chunkSize: chunkSize, chunkCount: chunks(count, chunkSize),
                            threadCount: 3, { hits.hit($0) }) {
                    accepted.wrappingAdd(1, ordering: .relaxed)
                    if !hits.wrong.isEmpty { failures.wrappingAdd(1, ordering: .relaxed) }
                } else if hits.wrong.count != min(5, count) {
                    failures.wrappingAdd(1, ordering: .relaxed) // a refused run touched something
                }
            }
        }
        let failuresValue = failures.load(ordering: .relaxed)
        #expect(failuresValue == 0)
        let acceptedValue = accepted.load(ordering: .relaxed)
        #expect(acceptedValue > 0)
    }

    @Test func nestedCallsRunInline() {
        let outer = 40, inner = 300
        let hits = Hits(outer * inner)
        forEachChunk(count: outer, chunkSize: 3, threadCount: 4) { outerRange in
            for o in outerRange {
                forEachChunk(count: inner, chunkSize: 7, threadCount: 4) { innerRange in
                    hits.hit(o * inner + innerRange.lowerBound..<o * inner + innerRange.upperBound)
                }
            }
        }
        #expect(hits.wrong.isEmpty)
        #expect(!WorkerPool.isInsideJob)
    }

    @Test func bodiesRunInsideAJobAndNestedCallsStayInline() {
        let pool = WorkerPool(threadCount: 3, spinMicroseconds: 20)
        defer { pool.stop() }
        let outside = Atomic<Int>(0)
        let hits = Hits(64 * 100)
        #expect(pool.run(count: 64, chunkSize: 1, chunkCount: 64, threadCount: 3) { outerRange in
            if !WorkerPool.isInsideJob { outside.wrappingAdd(1, ordering: .relaxed) }
            let o = outerRange.lowerBound
            // Inline: the same thread runs every inner chunk.
            let thread = pthread_self()
            forEachChunk(count: 100, chunkSize: 9, threadCount: 3) { innerRange in
                if pthread_equal(pthread_self(), thread) == 0 { outside.wrappingAdd(1, ordering: .relaxed) }
                hits.hit(o * 100 + innerRange.lowerBound..<o * 100 + innerRange.upperBound)
            }
        })
        let outsideValue = outside.load(ordering: .relaxed)
        #expect(outsideValue == 0)
        #expect(hits.wrong.isEmpty)
        #expect(!WorkerPool.isInsideJob)
    }

    @Test func idleHelpersPark() {
        let pool = WorkerPool(threadCount: 4, spinMicroseconds: 2000)
        defer { pool.stop() }
        #expect(eventually(within: 5) { pool.parkedHelperCount == 3 }, "fresh helpers did not park")
        for round in 0..<3 {
            let hits = Hits(10_000)
            #expect(pool.run(count: 10_000, chunkSize: 100, chunkCount: 100, threadCount: 4) { hits.hit($0) })
            #expect(hits.wrong.isEmpty)
            // After the 2 ms poll they must block again, well within a second
            // even on a loaded machine.
            #expect(eventually(within: 5) { pool.parkedHelperCount == 3 },
                    "round \(round): \(pool.parkedHelperCount) of 3 helpers parked")
        }
    }

    @Test func stoppedPoolRefusesWork() {
        let pool = WorkerPool(threadCount: 3)
        pool.stop()
        #expect(!pool.run(count: 10, chunkSize: 1, chunkCount: 10, threadCount: 3) { _ in
            Issue.record("a stopped pool ran a chunk")
        })
    }

    /// Each worker gets its own contiguous run first, in order; a worker
    /// left alone takes every other run's items too; nothing is dealt twice.
    @Test(arguments: [(10, 1), (10, 2), (7, 3), (3, 4), (100, 8)])
    func workRunsDealEachItemOnceOwnRunFirst(count: Int, workers: Int) {
        let runs = WorkRuns(count: count, workers: workers)
        for w in 0..<workers {
            let own = (w * count / workers..<(w + 1) * count / workers)
            let first = (0..<own.count).compactMap { _ in runs.next(for: w) }
            #expect(first == Array(own), "worker \(w) of \(workers) took \(first) first")
        }
        #expect(runs.next(for: 0) == nil)
        let lone = WorkRuns(count: count, workers: workers)
        var taken: [Int] = []
        while let i = lone.next(for: workers - 1) { taken.append(i) }
        let last = (workers - 1) * count / workers..<count
        #expect(Array(taken.prefix(last.count)) == Array(last), "a lone worker starts with its own run")
        #expect(taken.sorted() == Array(0..<count))
    }

    @Test func workRunsShareItemsAmongThreads() {
        let (count, workers) = (10_000, 4)
        let runs = WorkRuns(count: count, workers: workers)
        let hits = Hits(count)
        DispatchQueue.concurrentPerform(iterations: workers) { w in
            while let i = runs.next(for: w) { hits.hit(i..<i + 1) }
        }
        #expect(hits.wrong.isEmpty)
    }

    @Test func sharedPoolHasOneThreadPerProcessor() {
        #expect(WorkerPool.shared.helperCount == ProcessInfo.processInfo.activeProcessorCount - 1)
    }
}
