import Foundation
import Testing
@testable import LayerKit

/// The plan's host arena (`HostArena`, planned in `ModelPlan`): runs after
/// the first allocate no tensor storage when the outputs are given, give
/// the same bits as a tensor per value per run, never overwrite a result
/// handed back, and `predict(inputs:into:)` writes the caller's tensors.
///
/// Allocations are counted by `Tensor.allocationCounter`, a task-local in
/// the tensor's own allocation path, not by `mallinfo2` before and after:
/// the test process runs suites in parallel and Swift's runtime allocates
/// arrays and closures on every run, so process-wide heap figures would
/// need a tolerance wide enough to hide a small tensor; the counter sees
/// exactly the tensor storage this task allocates.
@Suite struct HostArenaTests {
    static func bits(_ tensor: Tensor) -> [UInt32] { tensor.values.map(\.bitPattern) }

    /// The backends the tests run on: the CPU, and the GPU (lavapipe) where enabled.
    static var units: [ComputeUnits] { TestGPU.isEnabled ? [.cpuOnly, .gpu] : [.cpuOnly] }

    /// A model whose GPU runs mix both processors: Relu and Sigmoid on the
    /// GPU, MatMul by a rank-3 constant (no GPU form) on the CPU, so downloads land in the arena
    /// and CPU results are uploaded from it; on the CPU the Relu after a
    /// MatMul runs in place. x [2, 6, 5] -> y [2, 6, 3].
    static func mixedModel() -> Data {
        // Weights of rank 3 keep both MatMuls broadcast ones, which run on the CPU (a MatMul by
        // a [K, N] constant would be a BatchedGemm step on the GPU).
        let w1 = ConvolutionFamilyTests.floats("w1", [1, 5, 7], 0.25)
        let w2 = ConvolutionFamilyTests.floats("w2", [1, 7, 3], 0.5)
        let nodes = [
            ONNXBytes.node("Relu", inputs: ["x"], outputs: ["a"], name: "relu0"),
            ONNXBytes.node("MatMul", inputs: ["a", "w1"], outputs: ["b"], name: "matmul1"),
            ONNXBytes.node("Relu", inputs: ["b"], outputs: ["c"], name: "relu1"),
            ONNXBytes.node("Sigmoid", inputs: ["c"], outputs: ["d"], name: "sigmoid"),
            ONNXBytes.node("MatMul", inputs: ["d", "w2"], outputs: ["e"], name: "matmul2"),
            ONNXBytes.node("Relu", inputs: ["e"], outputs: ["y"], name: "relu2"),
        ]
        return ONNXBytes.model(graph: ONNXBytes.graph(nodes: nodes, initializers: [w1, w2],
                                                      inputs: [ModelGraphTests.value("x", [2, 6, 5])],
                                                      extra: PB.bytes(12, ModelGraphTests.value("y", nil))))
    }

    /// The models of the allocation tests, each with an input.
    static func models(_ units: ComputeUnits) throws -> [(name: String, load: () throws -> Model, input: Tensor)] {
        [
            ("small_cnn", { try Model(contentsOf: ModelFixtures.url("small_cnn"), computeUnits: units, notice: { _ in }) },
             try ModelTests.input("small_cnn")),
            ("article_demo", { try Model(contentsOf: ModelFixtures.url("article_demo"), computeUnits: units, notice: { _ in }) },
             try ModelTests.input("article_demo")),
            ("mixed", { try Model(data: mixedModel(), name: "mixed.onnx", computeUnits: units, notice: { _ in }) },
             try Tensor.uniform(shape: [2, 6, 5], in: -2...2, seed: 9)),
        ]
    }

    /// Each output in a new tensor of its shape, filled with NaN.
    static func outputTensors(_ model: Model, for input: Tensor) throws -> [String: Tensor] {
        let shapes = try model.predict(inputs: [model.inputs[0].name: input]).mapValues(\.shape)
        return try shapes.mapValues { shape in
            let tensor = try Tensor(shape: shape)
            tensor.elements.update(repeating: .nan)
            return tensor
        }
    }

    @Test func runsIntoGivenOutputsAllocateNothingAndMatchATensorPerRun() throws {
        for units in Self.units {
            for (name, load, input) in try Self.models(units) {
                let inputs = [try load().inputs[0].name: input]
                let reference = try ModelPlan.$hostMemory.withValue(.tensorPerRun) {
                    try load().predict(inputs: inputs).mapValues(Self.bits)
                }
                for memory in [ModelPlan.HostMemory.arena, .poisonedArena] {
                    let model = try ModelPlan.$hostMemory.withValue(memory) { try load() }
                    if name == "mixed" {
                        let placements = model.nodes.compactMap(\.placement)
                        #expect(units == .cpuOnly || (placements.contains(.gpu) && placements.contains { !$0.isGPU }),
                                "\(placements)")
                    }
                    let outputs = try Self.outputTensors(model, for: input)  // also the warm-up run
                    let counter = TensorAllocationCounter()
                    for run in 0..<5 {
                        let results = try Tensor.$allocationCounter.withValue(counter) {
                            try model.predict(inputs: inputs, into: outputs)
                        }
                        for (output, tensor) in results {
                            #expect(tensor === outputs[output], "\(name) \(units): '\(output)' not the given tensor")
                            #expect(Self.bits(tensor) == reference[output], "\(name) \(units) \(memory) run \(run): '\(output)'")
                        }
                    }
                    #expect(counter.allocations == 0,
                            "\(name) \(units) \(memory): \(counter.allocations) tensors (\(counter.bytes) bytes) in 5 runs")
                    // Without given outputs, a run allocates its outputs only.
                    let plain = TensorAllocationCounter()
                    let results = try Tensor.$allocationCounter.withValue(plain) { try model.predict(inputs: inputs) }
                    #expect(plain.allocations == model.outputs.count, "\(name) \(units): \(plain.allocations)")
                    #expect(results.mapValues(Self.bits) == reference)
                }
            }
        }
    }

    /// The style network (Conv, InstanceNormalization, Resize, Pad, ...)
    /// gives the same bits from a poisoned arena as from a tensor per value.
    @Test func theStyleNetworkMatchesATensorPerRunBitForBit() throws {
        let data = try #require(BuiltInModels.data(named: BuiltInModels.styleName))
        let input = try StyleModelTests.input()
        var bits: [ModelPlan.HostMemory: [UInt32]] = [:]
        for memory in [ModelPlan.HostMemory.tensorPerRun, .poisonedArena] {
            let model = try ModelPlan.$hostMemory.withValue(memory) {
                try Model(data: data, computeUnits: .cpuOnly, notice: { _ in })
            }
            for _ in 0..<2 {
                let output = try #require(try model.predict(inputs: [model.inputs[0].name: input]).values.first)
                if let first = bits[memory] { #expect(Self.bits(output) == first) }
                bits[memory] = Self.bits(output)
            }
        }
        #expect(bits[.poisonedArena] == bits[.tensorPerRun])
    }

    /// Every reference case (the zoo family's whole networks among them)
    /// still matches onnxruntime with its arena filled with NaN before each
    /// run: no layer reads an output before writing it, and no value's
    /// bytes are reused while it is live, on either backend.
    @Test(arguments: ONNXCaseTests.cases)
    func everyReferenceCasePassesFromAPoisonedArena(_ name: String) throws {
        let folder = ONNXCaseTests.root.appendingPathComponent(name)
        try ModelPlan.$hostMemory.withValue(.poisonedArena) {
            let cpu = try ONNXCaseTests.cpu.get()
            let outcome = ONNXTestCase(folder: folder).run(on: cpu)
            #expect(outcome.passed, "\(name) cpu: \(outcome.message)")
            if TestGPU.isEnabled {
                let gpu = ONNXTestCase(folder: folder).run(on: try ONNXCaseTests.gpu.get(), gpuParityAgainst: cpu)
                #expect(gpu.passed, "\(name) gpu: \(gpu.message)")
            }
        }
    }

    @Test func aReturnedTensorIsNotOverwrittenByTheNextRun() throws {
        for units in Self.units {
            for (name, load, input) in try Self.models(units) {
                let model = try load()
                let key = model.inputs[0].name
                let first = try model.predict(inputs: [key: input])
                let kept = first.mapValues(Self.bits)
                let other = try Tensor(shape: input.shape, values: input.values.map { -2 * $0 + 0.5 })
                let second = try model.predict(inputs: [key: other])
                for (output, tensor) in second {
                    #expect(tensor !== first[output])
                    #expect(Self.bits(try #require(first[output])) == kept[output], "\(name) \(units): '\(output)' changed")
                    #expect(Self.bits(tensor) != kept[output], "\(name) \(units): the second input gave the same '\(output)'")
                }
            }
        }
    }

    @Test func aMismatchedOutputIsRefusedBeforeTheRun() throws {
        let model = try Model(contentsOf: ModelFixtures.url("small_cnn"), computeUnits: .cpuOnly, notice: { _ in })
        let input = try ModelTests.input("small_cnn")
        let output = try #require(model.outputs.first?.name)
        let wrong = try Tensor(shape: [1, 3])
        let profiler = Profiler()
        #expect {
            _ = try model.predict(inputs: ["x": input], into: [output: wrong], profiler: profiler)
        } throws: { error in
            "\(error)".contains("output '\(output)'") && "\(error)".contains("shape 1x3")
        }
        #expect(profiler.spans.isEmpty, "the model ran: \(profiler.spans.count) spans")
        #expect(wrong.values == [0, 0, 0])
        #expect { _ = try model.predict(inputs: ["x": input], into: ["nope": wrong]) } throws: { error in
            "\(error)".contains("no output 'nope'") && "\(error)".contains(output)
        }
        #expect { _ = try model.predict(inputs: ["x": input], into: [output: input]) } throws: { error in
            "\(error)".contains("is input 'x'")
        }
    }

    /// An output that is a graph input, given a tensor, receives a copy.
    @Test func aGivenOutputThatIsAnInputGetsACopy() throws {
        let data = ONNXBytes.model(graph: ONNXBytes.graph(
            nodes: [ONNXBytes.node("Identity", inputs: ["x"], outputs: ["y"], name: "id")],
            inputs: [ModelGraphTests.value("x", [1, 5])], extra: PB.bytes(12, ModelGraphTests.value("y", nil))))
        let model = try Model(data: data, name: "identity.onnx", computeUnits: .cpuOnly, notice: { _ in })
        let input = try Tensor(shape: [1, 5], values: [1, -2, 3, -4, 5])
        let output = try Tensor(shape: [1, 5])
        let results = try model.predict(inputs: ["x": input], into: ["y": output])
        #expect(results["y"] === output && output.values == input.values)
    }

    // MARK: - The plan

    /// Greedy by size: overlapping lifetimes never share bytes, disjoint
    /// ones do, an in-place pair shares its offset, offsets are 64-byte
    /// multiples.
    /// Views keep the arena's memory, not the arena: an arena its views
    /// owned was a cycle that leaked every plan's arena (found by `make
    /// valgrind`: the demo's plan, 98 KB a model).
    @Test func anArenaGoesWithItsPlanAndItsMemoryWithItsLastView() throws {
        weak var released: HostArena?
        var view: Tensor?
        do {
            let arena = try HostArena(byteCount: 256, offsets: [0, nil, 64], shapes: [[4], [1], [8]], poisoned: false)
            released = arena
            view = arena.views[2]
            view?.dataPointer[7] = 3
        }
        #expect(released == nil, "a view keeps its arena alive")
        #expect(view?.dataPointer[7] == 3)
    }

    @Test func offsetsShareBytesOnlyAcrossDisjointLifetimes() {
        let lifetimes = [
            HostArena.Lifetime(value: 0, first: 0, last: 1, bytes: 400),
            HostArena.Lifetime(value: 1, first: 1, last: 2, bytes: 100),
            HostArena.Lifetime(value: 2, first: 2, last: 3, bytes: 400),
            HostArena.Lifetime(value: 3, first: 3, last: 4, bytes: 400),
            HostArena.Lifetime(value: 4, first: 4, last: 5, bytes: 40),
        ]
        let (offsets, bytes) = HostArena.offsets(for: lifetimes, sharing: [(3, 4)], valueCount: 6)
        #expect(offsets.allSatisfy { ($0 ?? 0) % 64 == 0 })
        #expect(offsets[5] == nil)
        #expect(offsets[0] == offsets[2])  // 0 ends at step 1, 2 begins at 2
        #expect(offsets[3] == offsets[4])  // in place
        #expect(Self.disjoint(lifetimes, offsets, sharing: [(3, 4)]))
        // 2 and 3 overlap at step 3 (448 each); 1 (128) fits beside 0 and 2 at 448.
        #expect(bytes == 896 && offsets[1] == 448, "\(bytes)")
    }

    /// Whether values whose lifetimes overlap have disjoint bytes (except in-place pairs).
    static func disjoint(_ lifetimes: [HostArena.Lifetime], _ offsets: [Int?], sharing: [(Int, Int)]) -> Bool {
        for a in lifetimes {
            for b in lifetimes where a.value < b.value && a.first <= b.last && b.first <= a.last {
                if sharing.contains(where: { ($0.0, $0.1) == (a.value, b.value) || ($0.0, $0.1) == (b.value, a.value) }) {
                    continue
                }
                guard let x = offsets[a.value], let y = offsets[b.value] else { return false }
                if x < y + b.bytes && y < x + a.bytes { return false }
            }
        }
        return true
    }

    /// The plans of real models: every overlapping pair disjoint, and the
    /// arena smaller than a tensor per value.
    @Test func modelPlansKeepOverlappingValuesApart() throws {
        for units in Self.units {
            for (name, load, _) in try Self.models(units) {
                let model = try load()
                let plan = try #require(model.planForTests)
                let (lifetimes, sharing) = ModelPlan.hostLifetimes(plan.graph, placements: plan.placements,
                                                                   inPieces: plan.inPieces, lastUses: plan.lastUses)
                let (offsets, bytes) = HostArena.offsets(for: lifetimes, sharing: sharing, valueCount: plan.graph.values.count)
                #expect(Self.disjoint(lifetimes, offsets, sharing: sharing), "\(name) \(units)")
                let separate = lifetimes.map { ($0.bytes + 63) / 64 * 64 }.reduce(0, +)
                #expect(lifetimes.count < 2 || bytes < separate, "\(name) \(units): \(bytes) of \(separate)")
                if name == "mixed", units == .cpuOnly { #expect(!sharing.isEmpty, "the Relus after MatMul run in place") }
                for v in plan.graph.outputs + plan.graph.inputs { #expect(plan.arena?.views[v] == nil) }
            }
        }
    }
}
