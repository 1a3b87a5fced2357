import Foundation
import Testing
@testable import LayerKit
import LayerKitONNX

/// A family of fusion fixtures (a folder of onnx-cases written by a
/// Scripts/onnx_cases script) and the steps each model must become at
/// import, by op type in order: the epilogue and attention fusions' suites
/// check theirs the same way.
struct FusionFixtures: Sendable {
    let root: URL
    let expected: [String: [String]]

    init(family: String, expected: [String: [String]]) {
        root = ONNXCaseTests.root.appendingPathComponent(family)
        self.expected = expected
    }

    var names: [String] { expected.keys.sorted() }

    func model(_ name: String) -> URL { root.appendingPathComponent(name).appendingPathComponent("model.onnx") }

    /// Expects the family's case folders to be exactly the listed ones.
    func expectEveryFixtureListed() throws {
        let cases = try ONNXTestCase.cases(in: root).map(\.name).sorted()
        #expect(cases == names)
    }

    /// Fixture `name` loaded on a CPU backend, its steps expected to be the
    /// listed ones, and how its run compares with the stored outputs.
    func loadedOnTheCPU(_ name: String) throws -> (model: Model, outcome: ONNXTestCase.Outcome) {
        let backend = try Backend(computeUnits: .cpuOnly, notice: { _ in })
        let model = try Model(contentsOf: model(name), backend: backend)
        #expect(model.nodes.map(\.opType) == expected[name], "\(name): \(model.nodes.map(\.opType))")
        return (model, ONNXTestCase(folder: root.appendingPathComponent(name)).run(on: backend))
    }

    /// Fixture `name` loaded on the GPU backend: its steps the listed ones,
    /// every one placed on the GPU (unless not `everyStep`: a bool mask's
    /// `Where` is the CPU's), and its outputs within the parity rule
    /// against the CPU's.
    func expectEveryStepOnTheGPUWithinTheParityRule(_ name: String, everyStep: Bool = true) throws {
        let gpu = try Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in })
        let cpu = try Backend(computeUnits: .cpuOnly, notice: { _ in })
        let model = try Model(contentsOf: model(name), backend: gpu)
        #expect(model.nodes.map(\.opType) == expected[name])
        #expect(!everyStep || model.nodes.allSatisfy { $0.placement == .gpu }, "\(name): \(model.nodes)")
        let outcome = ONNXTestCase(folder: root.appendingPathComponent(name)).run(on: gpu, gpuParityAgainst: cpu)
        #expect(outcome.passed, "\(name): \(outcome.message)")
    }

    /// Fixture `name`'s graph, fused or with every node its own step, run
    /// on the CPU on its stored inputs: its outputs and step count.
    func run(_ name: String, fused: Bool, threads: Int? = nil) throws -> (outputs: [Tensor], steps: Int) {
        let onnx = try ONNXModel(data: Data(contentsOf: model(name)), source: name)
        let folder = root.appendingPathComponent(name).appendingPathComponent("test_data_set_0")
        let inputs = try onnx.graph.feedInputs.indices.map { i in
            try TypedTensor(tensorProto: [UInt8](Data(contentsOf: folder.appendingPathComponent("input_\(i).pb"))), source: name)
        }
        var importer = try ONNXImporter(model: onnx, registry: .shared)
        importer.keepsEveryNode = !fused
        let shapes = Dictionary(uniqueKeysWithValues: zip(onnx.graph.feedInputs.map(\.name), inputs.map(\.shape)))
        let graph = try importer.graph(inputShapes: shapes)
        let plan = try ModelPlan(graph: graph, backend: Backend(computeUnits: .cpuOnly, threads: threads, notice: { _ in }))
        let given = Array(zip(graph.inputs, inputs))
        let floats = try given.filter { !graph.values[$0.0].isTyped }.map { try $0.1.float32Tensor() }
        let typed = given.filter { graph.values[$0.0].isTyped }.map(\.1)
        let outputs = try CPUThreads.with(threads) {
            try ModelRun(plan: plan, gpu: nil, inputs: floats, typedInputs: typed, profiler: nil).run()
        }
        return (outputs, graph.steps.filter { $0.layer != nil }.count)
    }
}
