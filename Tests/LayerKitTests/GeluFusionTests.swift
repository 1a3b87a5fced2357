import Foundation
import Testing
@testable import LayerKit

/// The GELU fusion (ModelGraph+Gelu.swift): which steps each `gelu_fusion`
/// fixture (written by Scripts/onnx_cases/gelu_fusion.py from onnxruntime,
/// the fused forms checked there against float64 GELU) becomes, that the
/// fused graph matches onnxruntime on both backends and the unfused graph
/// within float32 rounding, and that the near misses keep their steps.
@Suite struct GeluFusionTests {
    static let erf = ["Div", "Erf", "Add", "Mul", "Mul"]
    /// Each fixture's steps after import, by op type, in order.
    static let fixtures = FusionFixtures(family: "gelu_fusion", expected: [
        "erf": ["Gelu"],
        "erf_half_first_reciprocal": ["Gelu"],
        "tanh_pow": ["Gelu"],
        "tanh_cube_by_muls": ["Gelu"],
        "linear_erf": ["MatMul+Add", "Gelu"],
        // A per-element stage: the Conv's epilogue takes it in.
        "conv1d_erf": ["Conv+Gelu"],
        // Not fused: Div by 3, not sqrt(2); the Erf's output is also a graph output.
        "near_wrong_constant": erf,
        "near_inner_output": erf,
    ])
    static let names = fixtures.names

    @Test func everyFixtureIsChecked() throws {
        try Self.fixtures.expectEveryFixtureListed()
    }

    @Test(arguments: names)
    func theGraphHasOneGeluStepAndMatchesOnnxRuntime(_ name: String) throws {
        let (model, outcome) = try Self.fixtures.loadedOnTheCPU(name)
        // The fused step is named after the Erf or Tanh node, in the standard domain.
        for node in model.nodes where node.opType == "Gelu" {
            #expect(["erf", "tanh"].contains(node.name) && node.domain.isEmpty, "\(name): \(node)")
        }
        #expect(outcome.passed, "\(name): \(outcome.message)")
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: names)
    func geluRunsOnTheGPUWithinTheParityRule(_ name: String) throws {
        try Self.fixtures.expectEveryStepOnTheGPUWithinTheParityRule(name)
    }

    /// The fused graph against every node on its own, on the same inputs:
    /// within float32 rounding of 1 + erf (or tanh) where it cancels, up to
    /// |x| 2^-23, relative to max(1, |y|) (the inputs reach |x| = 6, the
    /// Linear layer's outputs about 20).
    @Test(arguments: names)
    func fusedIsTheUnfusedGraph(_ name: String) throws {
        let unfused = try Self.fixtures.run(name, fused: false)
        let fused = try Self.fixtures.run(name, fused: true)
        #expect(fused.steps < unfused.steps || name.hasPrefix("near_"), "\(name)")
        #expect(fused.steps == unfused.steps || !name.hasPrefix("near_"), "\(name)")
        for (f, u) in zip(fused.outputs, unfused.outputs) {
            #expect(f.shape == u.shape)
            let worst = zip(f.values, u.values).map { abs($0 - $1) / max(1, abs($1)) }.max() ?? 0
            #expect(worst <= 1e-6, "\(name): \(worst)")
        }
    }
}
