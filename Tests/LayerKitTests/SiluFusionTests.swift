import Testing
@testable import LayerKit

/// The SiLU fusion (ModelGraph+Silu.swift): which steps each `silu_fusion`
/// fixture (written by Scripts/onnx_cases/silu_fusion.py; the fused cases'
/// references float64 SiLU, the near misses' onnxruntime) becomes, that the
/// fused graph is within its bound of float64 on the CPU and within the
/// parity rule on the GPU, and that the near misses keep their steps.
@Suite struct SiluFusionTests {
    /// Each fixture's steps after import, by op type, in order.
    static let fixtures = FusionFixtures(family: "silu_fusion", expected: [
        "silu": ["Swish"],
        "silu_sigmoid_first": ["Swish"],
        // Not fused: the sigmoid is also a graph output; the Mul's other operand is Neg(x).
        "near_sigmoid_output": ["Sigmoid", "Mul"],
        "near_other_operand": ["Neg", "Sigmoid", "Mul"],
    ])
    static let names = fixtures.names

    @Test func everyFixtureIsChecked() throws {
        try Self.fixtures.expectEveryFixtureListed()
    }

    @Test(arguments: names)
    func theGraphHasOneSwishStepAndMatchesItsReference(_ name: String) throws {
        let (model, outcome) = try Self.fixtures.loadedOnTheCPU(name)
        // The fused step is named after the Mul node, in the standard domain.
        for node in model.nodes where node.opType == "Swish" {
            #expect(node.name == "y" && node.domain.isEmpty, "\(name): \(node)")
        }
        #expect(outcome.passed, "\(name): \(outcome.message)")
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: names)
    func siluRunsOnTheGPUWithinTheParityRule(_ name: String) throws {
        try Self.fixtures.expectEveryStepOnTheGPUWithinTheParityRule(name)
    }
}
