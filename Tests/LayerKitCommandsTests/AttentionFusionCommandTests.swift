import Foundation
import LayerKit
import Testing

/// `layerkit run --profile` on the decomposed attention of GPT-2's export
/// (the `attention_fusion/gpt2_causal_mask` fixture: Mul-scaled Q and Kᵀ, a
/// causal And padding bool mask made additive by Where, Softmax, the IsNaN
/// guard): the profile shows one `layerkit.Attention` step named after the
/// scores MatMul and none of the replaced nodes, and the output written is
/// onnxruntime's (Scripts/onnx_cases/attention_fusion.py).
struct AttentionFusionCommandTests {
    static let folder = ModelCommandTests.fixtures.deletingLastPathComponent()
        .appendingPathComponent("onnx-cases/attention_fusion/gpt2_causal_mask")

    @Test func runShowsOneAttentionStepAndWritesOnnxRuntimesOutput() throws {
        let data = Self.folder.appendingPathComponent("test_data_set_0")
        let directory = try CommandRunner.scratchDirectory()
        var arguments = ["run", Self.folder.appendingPathComponent("model.onnx").path, "--backend", "cpu", "--profile",
                         "--output", "y=\(directory)/y.pb"]
        for (i, name) in ["xq", "xk", "xv", "attention_mask"].enumerated() {
            arguments += ["--input", "\(name)=" + data.appendingPathComponent("input_\(i).pb").path]
        }
        let runner = CommandRunner()
        #expect(runner.run(arguments) == 0, "\(runner.error)")
        #expect(runner.out.contains("scores (layerkit.Attention)  CPU        1"), "\(runner.out)")
        for replaced in ["(Softmax)", "(IsNaN)", "(MatMul)", "(Mul)", "(Add)", "p_guarded"] {
            #expect(!runner.out.contains(replaced), "\(replaced) in \(runner.out)")
        }
        let y = try TypedTensor(tensorProto: [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(directory)/y.pb"))), source: "y.pb")
            .float32Tensor()
        let file = data.appendingPathComponent("output_0.pb")
        let expected = try TypedTensor(tensorProto: [UInt8](Data(contentsOf: file)), source: file.path).float32Tensor()
        #expect(y.shape == [2, 21, 32] && y.shape == expected.shape)
        // Batch item 1's first three rows see no key (left padding): zero, as the IsNaN guard made them.
        #expect((0..<3 * 32).allSatisfy { y[21 * 32 + $0] == 0 && expected[21 * 32 + $0] == 0 })
        for (a, e) in zip(y.values, expected.values) { #expect(abs(a - e) <= 1e-5 + 1e-4 * abs(e), "\(a) vs \(e)") }
    }
}
