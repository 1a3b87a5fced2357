import Testing
@testable import LayerKit

/// Common subexpressions (ONNXImporter+SharedNodes.swift): which steps each
/// `shared_nodes` fixture (written by Scripts/onnx_cases/shared_nodes.py,
/// references onnxruntime's) becomes, that the shared graph matches
/// onnxruntime on the CPU and the parity rule on the GPU, and that the near
/// misses keep a step per node.
@Suite struct SharedNodeTests {
    /// Each fixture's steps after import, by op type, in order.
    static let fixtures = FusionFixtures(family: "shared_nodes", expected: [
        // Three layers' Where(mask, 0, -1e4), each from its own Constant nodes: one step.
        "mask_bias_per_layer": ["Where", "Add", "Softmax", "Add", "Softmax", "Add", "Softmax"],
        // Relu(x) twice is one step; Relu of that is another.
        "same_op_same_value": ["Relu", "Relu", "Add"],
        // Not shared: Softmax on other axes; Mul by 2 and by 3; two graph outputs.
        "near_attributes": ["Softmax", "Softmax", "Add"],
        "near_constants": ["Mul", "Mul", "Add"],
        "near_graph_outputs": ["Exp", "Exp"],
    ])
    static let names = fixtures.names

    @Test func everyFixtureIsChecked() throws {
        try Self.fixtures.expectEveryFixtureListed()
    }

    @Test(arguments: names)
    func sharedNodesRunOnceAndMatchOnnxRuntime(_ name: String) throws {
        let (_, outcome) = try Self.fixtures.loadedOnTheCPU(name)
        #expect(outcome.passed, "\(name): \(outcome.message)")
    }

    /// Training keeps a step for every node: nothing is shared.
    @Test func trainingGraphsShareNothing() throws {
        #expect(try Self.fixtures.run("mask_bias_per_layer", fused: false).steps == 3 * 3)
        #expect(try Self.fixtures.run("same_op_same_value", fused: false).steps == 4)
    }

    /// On the GPU backend too (the mask's `Where` and Softmax along axis 0
    /// stay on the CPU): the same steps, within the parity rule.
    @Test(.enabled(if: TestGPU.isEnabled), arguments: names)
    func sharedNodesRunOnTheGPUWithinTheParityRule(_ name: String) throws {
        try Self.fixtures.expectEveryStepOnTheGPUWithinTheParityRule(name, everyStep: false)
    }
}
