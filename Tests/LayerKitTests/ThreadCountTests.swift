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

    /// A Conv (1x1, trained) then a 2x2 AveragePool on x [256, 1, 16, 16]:
    /// the pool's backward kernel runs outside any layer run, in chunks of
    /// planes (three of 204 here), so two threads split it.
    static func poolNet() throws -> URL {
        let graph = ONNXBytes.graph(
            nodes: [ONNXBytes.node("Conv", inputs: ["x", "w", "b"], outputs: ["c"], name: "conv"),
                    ONNXBytes.node("AveragePool", inputs: ["c"], outputs: ["y"], name: "pool",
                                   attributes: [ConvolutionFamilyTests.attribute("kernel_shape", ints: [2, 2]),
                                                ConvolutionFamilyTests.attribute("strides", ints: [2, 2])])],
            initializers: [ConvolutionFamilyTests.floats("w", [1, 1, 1, 1]), ConvolutionFamilyTests.floats("b", [1])],
            inputs: [ModelGraphTests.value("x", [256, 1, 16, 16])],
            extra: PB.bytes(12, ModelGraphTests.value("y", [256, 1, 8, 8])))
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pool-net-\(UUID().uuidString).onnx")
        try ONNXBytes.model(graph: graph).write(to: url)
        return url
    }

    @Test func trainingStepsKeepToTheTaskThreads() throws {
        let url = try Self.poolNet()
        defer { try? FileManager.default.removeItem(at: url) }
        let data = try ArrayBatchProvider(inputs: Tensor.uniform(shape: [256, 1, 16, 16], in: -1...1, seed: 4),
                                          targets: Tensor.uniform(shape: [256, 1, 8, 8], in: -1...1, seed: 5))
        let configuration = TrainingConfiguration(loss: .meanSquaredError, optimizer: .adam(learningRate: 0.01),
                                                  epochs: 1, batchSize: 256, shuffles: false, trainable: .all)
        var results: [Int: [UInt32]] = [:]
        // 2 is the control: the same steps do split when allowed to.
        for threads in [1, 2] {
            let task = try UpdateTask(modelAt: url, data: data, configuration: configuration, threads: threads)
            let peak = try Self.peakThreads { try task.run() }
            #expect(peak == threads, "a task of \(threads) threads ran a loop on \(peak)")
            results[threads] = Self.bits(try #require(task.parameters["w"]))
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
