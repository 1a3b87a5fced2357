import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// The transformer ops beyond their reference cases (Fixtures/onnx-cases/
/// attention, Scripts/onnx_cases/attention.py, and the onnx node tests hold
/// their values): hostile attributes and shapes
/// are errors naming the node, threads give the same bits, and a long
/// sequence's work items hold one block of scores, not the score matrix.
struct AttentionOpTests {
    static func int(_ name: String, _ value: Int64) -> [UInt8] { RankRuleTests.int(name, value) }
    static func float(_ name: String, _ value: Float) -> [UInt8] { OpVersionTests.float(name, value) }

    /// A float constant of `shape`, every value 0.1.
    static func constant(_ name: String, _ shape: [Int64]) -> [UInt8] {
        NormalizationOpsTests.floats(name, shape, Array(repeating: 0.1, count: Int(shape.reduce(1, *))))
    }

    /// An int64 constant.
    static func int64s(_ name: String, _ values: [Int64]) -> [UInt8] {
        ONNXBytes.tensor(name, dims: [Int64(values.count)], type: 7, PB.bytes(7, values.flatMap { PB.varint(UInt64(bitPattern: $0)) }))
    }

    /// The load (or first run) error of an `op` node on input x of `shape`
    /// and the constants `initializers`.
    static func failure(_ op: String = "Attention", inputs: [String] = ["x", "k", "v"], outputs: [String] = ["y"],
                        attributes: [[UInt8]] = [], opset: Int64 = 23, shape: [Int] = [1, 2, 3, 8],
                        initializers: [[UInt8]] = [constant("k", [1, 2, 5, 8]), constant("v", [1, 2, 5, 8])]) -> String {
        NormalizationOpsTests.loadError(NormalizationOpsTests.node(op, inputs: inputs, outputs: outputs, attributes: attributes),
                                        opset: opset, initializers: initializers, shape: shape)
    }

    @Test func hostileAttentionNodesAreErrorsNamingTheNode() {
        let past = [Self.constant("k", [1, 2, 5, 8]), Self.constant("v", [1, 2, 5, 8]), Self.constant("pk", [1, 2, 4, 8]),
                    Self.constant("pv", [1, 2, 4, 8])]
        let cases: [(String, String)] = [
            (Self.failure(shape: [1, 4, 3, 8], initializers: [Self.constant("k", [1, 3, 5, 8]), Self.constant("v", [1, 3, 5, 8])]),
             "node 'n1' (Attention): Attention: the 3 key/value heads do not divide the 4 query heads"),
            (Self.failure(initializers: [Self.constant("k", [1, 2, 5, 6]), Self.constant("v", [1, 2, 5, 8])]),
             "node 'n1' (Attention): Attention: Q 1x2x3x8, K 1x2x5x6 and V 1x2x5x8: the query head size 8 differs from "
             + "the key head size 6"),
            (Self.failure(initializers: [Self.constant("k", [1, 2, 5, 8]), Self.constant("v", [1, 2, 4, 8])]),
             "K and V have different head counts or sequence lengths"),
            (Self.failure(inputs: ["x", "k", "v", "m"],
                          initializers: [Self.constant("k", [1, 2, 5, 8]), Self.constant("v", [1, 2, 5, 8]),
                                         Self.constant("m", [2, 5])]),
             "node 'n1' (Attention): Attention: attn_mask 2x5 does not broadcast to [batch, q_num_heads, "
             + "q_sequence_length, keys] = 1x2x3x5"),
            (Self.failure(inputs: ["x", "k", "v", "m"],
                          initializers: [Self.constant("k", [1, 2, 5, 8]), Self.constant("v", [1, 2, 5, 8]),
                                         Self.constant("m", [3, 9])]),
             "attn_mask 1x1x3x9 covers 9 keys; there are 5"),
            (Self.failure(shape: [1, 3, 16], initializers: [Self.constant("k", [1, 5, 16]), Self.constant("v", [1, 5, 16])]),
             "node 'n1' (Attention): Attention: 3-D inputs need q_num_heads and kv_num_heads"),
            (Self.failure(attributes: [Self.int("q_num_heads", 3), Self.int("kv_num_heads", 2)], shape: [1, 3, 16],
                          initializers: [Self.constant("k", [1, 5, 16]), Self.constant("v", [1, 5, 16])]),
             "q_num_heads 3 must divide Q's hidden size"),
            (Self.failure(attributes: [Self.int("q_num_heads", 0), Self.int("kv_num_heads", 2)]),
             "node 'n1' (Attention): Attention: q_num_heads 0 must be >= 1"),
            (Self.failure(attributes: [Self.int("q_num_heads", 2)], opset: 25),
             "node 'n1' (Attention): q_num_heads and kv_num_heads are for 3-D inputs"),
            (Self.failure(attributes: [Self.int("q_num_heads", 5)]), "q_num_heads 5 does not match the 2 heads"),
            (Self.failure(attributes: [Self.int("qk_matmul_output_mode", 4)]),
             "node 'n1' (Attention): qk_matmul_output_mode 4 is not 0, 1, 2 or 3"),
            (Self.failure(attributes: [Self.int("is_causal", 2)]), "node 'n1' (Attention): is_causal 2 is not 0 or 1"),
            (Self.failure(attributes: [Self.float("scale", -1)]), "node 'n1' (Attention): Attention: scale -1.0 must be finite and > 0"),
            (Self.failure(attributes: [Self.float("softcap", .infinity)]), "Attention: softcap inf must be finite and >= 0"),
            (Self.failure(attributes: [Self.int("softmax_precision", 7)]),
             "node 'n1' (Attention): softmax_precision 7 is not a float element type"),
            (Self.failure(attributes: [Self.int("left_window_size", -2)], opset: 25),
             "left_window_size -2 and right_window_size -1 must be -1 or more"),
            (Self.failure(inputs: ["x", "k", "v", "", "pk"], initializers: past),
             "node 'n1' (Attention): past_key and past_value must be given together"),
            (Self.failure(inputs: ["x", "k", "v", "", "pk", "pv"],
                          initializers: [Self.constant("k", [1, 2, 5, 8]), Self.constant("v", [1, 2, 5, 8]),
                                         Self.constant("pk", [1, 2, 4, 8]), Self.constant("pv", [1, 2, 3, 8])]),
             "past_key 1x2x4x8 and past_value 1x2x3x8 must be [batch, kv_num_heads, past length, head size]"),
            (Self.failure(inputs: ["x", "k", "v", "", "pk", "pv", "n"], opset: 24, initializers: past + [Self.int64s("n", [5])]),
             "node 'n1' (Attention): nonpad_kv_seqlen cannot be combined with past_key and past_value"),
            (Self.failure(inputs: ["x", "k", "v", "", "", "", "n"], opset: 24, initializers: past + [Self.int64s("n", [5, 5])]),
             "node 'n1' (Attention): Attention: nonpad_kv_seqlen has 2 values for a batch of 1"),
            (Self.failure(inputs: ["x", "k", "v", "", "", "", "n"], opset: 24, initializers: past + [Self.int64s("n", [9])]),
             "node 'n1' (Attention): Attention: nonpad_kv_seqlen 9 is past the 5 keys"),
            (Self.failure(inputs: ["x", "k", "v", "", "", "", "n"], opset: 24, initializers: past + [Self.int64s("n", [-1])]),
             "node 'n1' (Attention): Attention: nonpad_kv_seqlen -1 is negative"),
            (Self.failure(inputs: ["x", "k", "v", "m"],
                          initializers: past + [ONNXBytes.tensor("m", dims: [3, 5], type: 6,
                                                                 PB.bytes(5, Array(repeating: 1, count: 15).flatMap { PB.varint($0) }))]),
             "node 'n1' (Attention): input 3 ('m') is int32, which ONNX allows but LayerKit does not compute for Attention"),
            // 65536 queries and keys: their scores output would be 2^32 floats, refused at load, before any run.
            (Self.failure(inputs: ["x", "x", "x"], outputs: ["y", "", "", "s"], shape: [1, 1, 65536, 8], initializers: []),
             "node 'n1' (Attention): its output 1x1x65536x65536 would hold more than"),
        ]
        for (error, expected) in cases {
            #expect(error.contains(expected), "\(error)")
        }
    }

    @Test func hostileRMSNormalizationAndRotaryEmbeddingNodesAreErrorsNamingTheNode() {
        let caches = [Self.constant("c", [2, 4, 4]), Self.constant("s", [2, 4, 4])]
        let rotary = ["x", "c", "s"]
        let cases: [(String, String)] = [
            (Self.failure("RMSNormalization", inputs: ["x", "w"], initializers: [Self.constant("w", [4])]),
             "node 'n1' (RMSNormalization): scale of shape 4 does not broadcast to the normalized axes 8"),
            (Self.failure("RMSNormalization", inputs: ["x", "w"], attributes: [Self.float("epsilon", -1)],
                          initializers: [Self.constant("w", [8])]),
             "node 'n1' (RMSNormalization): RMSNormalization: epsilon must be finite and >= 0, got -1.0"),
            (Self.failure("RMSNormalization", inputs: ["x", "w"], attributes: [Self.int("stash_type", 7)],
                          initializers: [Self.constant("w", [8])]),
             "node 'n1' (RMSNormalization): stash_type 7 is not a float element type"),
            (Self.failure("RMSNormalization", inputs: ["x", "w"], attributes: [Self.int("axis", 4)],
                          initializers: [Self.constant("w", [8])]),
             "node 'n1' (RMSNormalization): axis 4 is out of range for rank 4"),
            (Self.failure("RotaryEmbedding", inputs: rotary, attributes: [Self.int("rotary_embedding_dim", 3)],
                          shape: [2, 3, 4, 8], initializers: caches),
             "node 'n1' (RotaryEmbedding): RotaryEmbedding: rotary_embedding_dim 3 must be even and >= 0"),
            (Self.failure("RotaryEmbedding", inputs: rotary, attributes: [Self.int("rotary_embedding_dim", 10)],
                          shape: [2, 3, 4, 8], initializers: [Self.constant("c", [2, 4, 5]), Self.constant("s", [2, 4, 5])]),
             "the rotary dimension 10 must be even and at most the head size 8"),
            (Self.failure("RotaryEmbedding", inputs: rotary, shape: [2, 4, 24], initializers: caches),
             "node 'n1' (RotaryEmbedding): RotaryEmbedding: a 3-D input 2x4x24 needs num_heads"),
            (Self.failure("RotaryEmbedding", inputs: rotary, attributes: [Self.int("interleaved", 3)],
                          shape: [2, 3, 4, 8], initializers: caches),
             "node 'n1' (RotaryEmbedding): interleaved 3 is not 0 or 1"),
            (Self.failure("RotaryEmbedding", inputs: rotary, shape: [2, 3, 4, 8],
                          initializers: [Self.constant("c", [2, 4, 3]), Self.constant("s", [2, 4, 3])]),
             "without position_ids, cos_cache 2x4x3 must be 2x4x4"),
            (Self.failure("RotaryEmbedding", inputs: rotary + ["p"], shape: [1, 3, 2, 8],
                          initializers: [Self.constant("c", [20, 4]), Self.constant("s", [20, 4]), Self.int64s("p", [3, 50])]),
             "node 'n1' (RotaryEmbedding): RotaryEmbedding: position_ids holds 50, past the 20 rows of cos_cache"),
        ]
        for (error, expected) in cases {
            #expect(error.contains(expected), "\(error)")
        }
    }

    @Test func hostileLinearAttentionCausalConvAndSwiGLUNodesAreErrorsNamingTheNode() {
        let qkv = [Self.constant("k", [1, 3, 16]), Self.constant("v", [1, 3, 8])]
        let heads = [Self.int("q_num_heads", 2), Self.int("kv_num_heads", 2)]
        let linear = ["x", "k", "v"]
        let cases: [(String, String)] = [
            (Self.failure("LinearAttention", inputs: linear, outputs: ["y", "s"], attributes: heads, opset: 27, shape: [1, 3, 16],
                          initializers: qkv),
             "node 'n1' (LinearAttention): update_rule 'gated_delta' needs decay input"),
            (Self.failure("LinearAttention", inputs: linear, outputs: ["y", "s"],
                          attributes: heads + [RecurrentOpTests.string("update_rule", "sideways")], opset: 27, shape: [1, 3, 16],
                          initializers: qkv),
             "node 'n1' (LinearAttention): update_rule 'sideways' is not linear, gated, delta or gated_delta"),
            (Self.failure("LinearAttention", inputs: linear, outputs: ["y", "s"],
                          attributes: [Self.int("q_num_heads", 3), Self.int("kv_num_heads", 2),
                                       RecurrentOpTests.string("update_rule", "linear")], opset: 27, shape: [1, 3, 16],
                          initializers: qkv),
             "node 'n1' (LinearAttention): LinearAttention: q_num_heads 3 must be a positive multiple of kv_num_heads 2"),
            (Self.failure("LinearAttention", inputs: linear, outputs: ["y", "s"],
                          attributes: heads + [RecurrentOpTests.string("update_rule", "linear")], opset: 27, shape: [1, 3, 12],
                          initializers: qkv),
             "do not split into 2 query and 2 key/value heads of one key size"),
            (Self.failure("LinearAttention", inputs: linear + ["p"], outputs: ["y", "s"],
                          attributes: heads + [RecurrentOpTests.string("update_rule", "linear")], opset: 27, shape: [1, 3, 16],
                          initializers: qkv + [Self.constant("p", [1, 2, 8, 3])]),
             "LinearAttention: past_state 1x2x8x3 must be 1x2x8x4"),
            (Self.failure("CausalConvWithState", inputs: ["x", "w"], outputs: ["y", "s"], opset: 27, shape: [2, 3, 5],
                          initializers: [Self.constant("w", [4, 1, 3])]),
             "node 'n1' (CausalConvWithState): CausalConvWithState: weight 4x1x3 must be [channels, 1, k] with 3 channels"),
            (Self.failure("CausalConvWithState", inputs: ["x", "w", "", "p"], outputs: ["y", "s"], opset: 27, shape: [2, 3, 5],
                          initializers: [Self.constant("w", [3, 1, 3]), Self.constant("p", [2, 3, 3])]),
             "CausalConvWithState: past_state 2x3x3 must be 2x3x2"),
            (Self.failure("CausalConvWithState", inputs: ["x", "w"], outputs: ["y", "s"],
                          attributes: [RecurrentOpTests.string("activation", "gelu")], opset: 27, shape: [2, 3, 5],
                          initializers: [Self.constant("w", [3, 1, 3])]),
             "node 'n1' (CausalConvWithState): activation 'gelu' is not none, silu or swish"),
            (Self.failure("SwiGLU", inputs: ["x", "b"], opset: 28, shape: [2, 4], initializers: [Self.constant("b", [1, 4])]),
             "node 'n1' (SwiGLU): SwiGLU: A 2x4 and B 1x4 must have one shape (no broadcasting)"),
            (Self.failure("SwiGLU", inputs: ["x", "b"], attributes: [Self.float("alpha", .nan)], opset: 28, shape: [2, 4],
                          initializers: [Self.constant("b", [2, 4])]),
             "node 'n1' (SwiGLU): SwiGLU: alpha must be finite, got nan"),
        ]
        for (error, expected) in cases {
            #expect(error.contains(expected), "\(error)")
        }
    }

    /// Shapes no ONNX node reaches (the importer refuses zero-size inputs)
    /// are still errors of the layer, not traps: key/value tensors of no heads.
    @Test func keysOfNoHeadsAreAShapeError() throws {
        let layer = try Attention(options: Attention.Options())
        #expect(throws: LayerKitError.self) {
            _ = try layer.outputShapes(forInputShapes: [[1, 2, 3, 8], [1, 0, 5, 8], [1, 0, 5, 8]])
        }
    }

    /// Work items split over two threads give the one-thread bits: each
    /// tile of query rows is computed the same way on any thread. The sizes
    /// (300 keys: three blocks; 100 queries: four tiles) are past the
    /// threshold for two threads.
    @Test func threadsGiveTheSameBits() throws {
        var options = Attention.Options()
        options.isCausal = true
        options.hasMask = true
        options.softcap = 3
        options.outputCount = 4
        options.scores = .probabilities
        let layer = try Attention(options: options)
        let inputs = try [[1, 4, 100, 16], [1, 2, 300, 16], [1, 2, 300, 12], [100, 300]].enumerated().map {
            try RecurrentOpTests.tensor($0.element, seed: UInt64($0.offset + 1))
        }
        func run(threads: Int) throws -> [[Float]] {
            let outputs = try layer.outputShapes(forInputShapes: inputs.map(\.shape)).map { try Tensor(shape: $0) }
            let observer = CPUThreadObserver()
            try CPUThreads.$observer.withValue(observer) {
                try CPUThreads.with(threads) { try layer.evaluate(inputs: inputs, outputs: outputs) }
            }
            #expect(observer.peakWorkers == threads)
            return outputs.map(\.values)
        }
        let (one, two) = (try run(threads: 1), try run(threads: 2))
        #expect(one.map { $0.map(\.bitPattern) } == two.map { $0.map(\.bitPattern) })
    }

    /// A work item of a 2048-token sequence of head size 64 (the length of
    /// attention_gqa_causal_2048, which ONNXCaseTests checks against
    /// onnxruntime) allocates one block of scores, whatever the length: under
    /// 1/64 of one head's 2048 x 2048 score matrix (a 128-row tile: 130 KB).
    @Test func aLongSequenceHoldsOneBlockOfScoresAWorkItem() {
        let perItem = Attention.scratchCount(headSize: 64, valueHeadSize: 64)
        #expect(perItem == Attention.tileRows * (64 + Attention.keyBlock + 64 + 4))
        #expect(perItem < 2048 * 2048 / 64, "\(perItem) floats a work item")
    }
}
