import Foundation
import Testing
@testable import LayerKit

/// `threads` on `Backend` and `Model`: the CPU evaluator's loops get that
/// many threads (seen through `CPUThreads.observer`), and the results do
/// not depend on it, bit for bit.
@Suite struct ThreadCountTests {
    /// The most threads a CPU loop was given while `body` ran.
    static func peakThreads(_ body: () throws -> Void) throws -> Int {
        let observer = CPUThreadObserver()
        try CPUThreads.$observer.withValue(observer) { try body() }
        return observer.peakWorkers
    }

    static func bits(_ tensor: Tensor) -> [UInt32] { tensor.values.map(\.bitPattern) }

    @Test func backendThreadsAreHonouredAndResultsAreBitwiseEqual() throws {
        // 1x64x64x64: four 64K-element chunks, enough for two threads.
        let input = try Tensor.uniform(shape: [1, 64, 64, 64], in: -10...10, seed: 3)
        var results: [Int: [UInt32]] = [:]
        for threads in [1, 2] {
            let backend = try Backend(computeUnits: .cpuOnly, threads: threads)
            #expect(backend.threads == threads)
            var output: Tensor?
            let peak = try Self.peakThreads { output = try backend.run(Swish(), inputs: [input]).outputs[0] }
            #expect(peak == threads, "asked for \(threads) threads, a loop got \(peak)")
            results[threads] = Self.bits(try #require(output))
        }
        #expect(results[1] == results[2])
    }

    @Test func modelThreadsAreHonouredAndResultsAreBitwiseEqual() throws {
        let input = try ModelTests.input("small_cnn")
        var results: [Int: [UInt32]] = [:]
        for threads in [1, 2] {
            let model = try Model(contentsOf: ModelFixtures.url("small_cnn"), computeUnits: .cpuOnly, threads: threads)
            #expect(model.backend.threads == threads)
            var outputs: [String: Tensor] = [:]
            let peak = try Self.peakThreads { outputs = try model.predict(inputs: ["x": input]) }
            #expect(peak <= threads, "asked for \(threads) threads, a loop got \(peak)")
            results[threads] = Self.bits(try #require(outputs["probabilities"]))
        }
        #expect(results[1] == results[2])
    }

    @Test func theDefaultIsTheProcessorsTheProcessMayUse() throws {
        let backend = try Backend(computeUnits: .cpuOnly)
        #expect(backend.threads == nil)
        #expect(CPUThreads.current == ProcessInfo.processInfo.activeProcessorCount)
        #expect(CPUThreads.with(3) { CPUEvaluator().threadCount } == 3)
    }

    @Test func aCountBelowOneOrBesideASharedBackendIsRefused() throws {
        #expect(throws: LayerKitError.self) { try Backend(computeUnits: .cpuOnly, threads: 0) }
        let backend = try Backend(computeUnits: .cpuOnly)
        #expect(throws: LayerKitError.self) {
            try Model(contentsOf: ModelFixtures.url("small_cnn"), backend: backend, threads: 2)
        }
    }
}
