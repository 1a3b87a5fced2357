import Foundation
import Testing
@testable import LayerKit
import LayerKitONNX

/// The attention fusion (ModelGraph+Attention.swift): which steps each
/// `attention_fusion` fixture (written by
/// Scripts/onnx_cases/attention_fusion.py from onnxruntime, checked there
/// against float64 attention) becomes, that the fused graph matches
/// onnxruntime (fully masked rows zero with the IsNaN guard, NaN without)
/// and the unfused graph, and that the near misses keep their steps.
@Suite struct AttentionFusionTests {

    static let exporter = ["Transpose", "Transpose", "Transpose"]
    /// Each fixture's steps after import, by op type, in order.
    static let fixtures = FusionFixtures(family: "attention_fusion", expected: [
        // The keys' Transpose [0, 2, 3, 1] becomes [0, 2, 1, 3]; the scale Muls, the scores MatMul, the
        // mask's Add, Softmax, IsNaN, Where and the product with V are the Attention step.
        "bert_padding_mask": exporter + ["Reshape", "Where", "Attention", "Transpose", "Reshape"],
        "bert_long": exporter + ["Reshape", "Where", "Attention", "Transpose", "Reshape"],
        "gpt2_causal_mask": exporter + ["Reshape", "And", "Where", "Attention", "Transpose", "Reshape"],
        "vit_unmasked": ["Transpose", "Transpose", "Attention"],
        "whisper_unit_scale": ["Transpose", "Transpose", "Attention"],
        // Transpose [0, 1, 3, 2] of K: K itself, the Transpose goes too.
        "older_div_finite_mask": ["Attention"],
        "older_mul_constant_mask_nan_row": ["Attention"],
        "older_mask_per_head": ["Attention"],
        "older_rank2_mask": ["Attention"],
        // GPT-2's decode step: the present Concats stay (graph outputs), the keys' Transpose goes, and so
        // does the Cast to float between Softmax and the product with V (a step that did no work).
        "gpt2_kv_decode": ["Concat", "Concat", "Attention"],
        // Not fused: Softmax along the queries; the scores also a graph output; a mask broadcast along the keys.
        "near_softmax_axis2": ["Transpose", "MatMul", "Div", "Softmax", "MatMul"],
        "near_scores_read_twice": ["Transpose", "MatMul", "Div", "Softmax", "MatMul"],
        "near_mask_broadcast_keys": ["Transpose", "MatMul", "Div", "Add", "Softmax", "MatMul"],
    ])
    static let names = fixtures.names

    @Test func everyFixtureIsChecked() throws {
        try Self.fixtures.expectEveryFixtureListed()
    }

    @Test(arguments: names)
    func theGraphHasOneAttentionStepAndMatchesOnnxRuntime(_ name: String) throws {
        let (model, outcome) = try Self.fixtures.loadedOnTheCPU(name)
        // The fused step is named after the scores MatMul, in LayerKit's domain, on the CPU.
        for node in model.nodes where node.opType == "Attention" {
            #expect(node.name == "scores" && node.domain == "layerkit", "\(name): \(node)")
            guard case .cpu = node.placement else { Issue.record("\(name): \(node)"); continue }
        }
        #expect(outcome.passed, "\(name): \(outcome.message)")
    }

    /// The fused graph against every node on its own (`keepsEveryNode`), on
    /// the same inputs, at 1 and 3 threads: the same NaN rows, values within
    /// float32 rounding of the scale's product and the online softmax.
    @Test(arguments: names)
    func fusedIsTheUnfusedGraph(_ name: String) throws {
        let unfused = try Self.fixtures.run(name, fused: false)
        for threads in [1, 3] {
            let fused = try Self.fixtures.run(name, fused: true, threads: threads)
            #expect(fused.steps < unfused.steps || name.hasPrefix("near_"), "\(name)")
            #expect(fused.steps == unfused.steps || !name.hasPrefix("near_"), "\(name)")
            for (f, u) in zip(fused.outputs, unfused.outputs) {
                #expect(f.shape == u.shape)
                #expect(zip(f.values, u.values).allSatisfy { $0.isNaN == $1.isNaN }, "\(name): NaN rows")
                let worst = zip(f.values, u.values).filter { !$1.isNaN }.map { abs($0 - $1) / max(1, abs($1)) }.max() ?? 0
                #expect(worst <= 1e-5, "\(name), \(threads) threads: \(worst)")
            }
        }
    }

    /// The fully masked rows: zero with the IsNaN / Where guard (batch item 1
    /// of `bert_padding_mask` sees no key), NaN without it (query 4 of
    /// `older_mul_constant_mask_nan_row`), as the replaced nodes made them.
    @Test func fullyMaskedRowsAreWhatTheReplacedNodesMade() throws {
        let bert = try Self.fixtures.run("bert_padding_mask", fused: true)
        let y = bert.outputs[0]
        let item = y.count / 2
        #expect(y.values[item...].allSatisfy { $0 == 0 })
        #expect(y.values[..<item].contains { $0 != 0 })
        let older = try Self.fixtures.run("older_mul_constant_mask_nan_row", fused: true)
        let out = older.outputs[0]  // [2, 3, 19, 6]
        for index in 0..<out.count {
            let row = (index / 6) % 19
            #expect(out.values[index].isNaN == (row == 4), "element \(index)")
        }
    }
}
