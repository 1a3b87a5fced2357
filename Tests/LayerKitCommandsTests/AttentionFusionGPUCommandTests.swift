import Foundation
import LayerKit
import Testing
@testable import LayerKitCommands

/// `layerkit run --backend gpu` on the fused `attention_fusion` fixtures
/// (Scripts/onnx_cases/attention_fusion.py: onnxruntime's outputs, checked
/// there against float64 attention): the `layerkit.Attention` step runs on
/// the GPU (its profile line says GPU), a fully masked row is NaN where the
/// graph had no IsNaN / Where guard (`older_mul_constant_mask_nan_row`,
/// Attention's `maskedRowsAreNaN`, flag 32 of Shaders/attention.comp) and
/// zero where it had one (`bert_padding_mask`, `bert_long`,
/// `gpt2_causal_mask`), and every other value is within `tolerance` of
/// onnxruntime's.
struct AttentionFusionGPUCommandTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("LayerKitTests/Fixtures/onnx-cases/attention_fusion")

    /// `max |y - ref| / max(1, |ref|)`, the parity tolerance: Y's fp16
    /// store alone costs up to 4.9e-4 of it (the fixtures' inputs, not fp16
    /// values, are rounded too; the worst seen is 4.8e-4).
    static let tolerance = 1e-3

    /// A fused fixture and its graph inputs, in the order of its .pb files.
    struct Case: Sendable, CustomStringConvertible {
        let name: String
        let inputs: [String]
        var description: String { name }
    }

    static let exporter = ["xq", "xk", "xv", "attention_mask"]
    static let cases = [
        Case(name: "bert_padding_mask", inputs: exporter), Case(name: "bert_long", inputs: exporter),
        Case(name: "gpt2_causal_mask", inputs: exporter), Case(name: "vit_unmasked", inputs: ["xq", "xk", "v"]),
        Case(name: "whisper_unit_scale", inputs: ["xq", "xk", "v"]),
        // (older_div_finite_mask is not here: its -3.4e38 mask does not fit fp16, so the model runs on the CPU.)
        Case(name: "older_mul_constant_mask_nan_row", inputs: ["q", "k", "v"]),
        Case(name: "older_mask_per_head", inputs: ["q", "k", "v", "mask"]),
        Case(name: "older_rank2_mask", inputs: ["q", "k", "v", "mask"]),
    ]

    @Test(.enabled(if: gpuTestsEnabled), arguments: cases)
    func theFusedStepRunsOnTheGPUWithOnnxRuntimesMaskedRows(_ testCase: Case) throws {
        let folder = Self.root.appendingPathComponent(testCase.name)
        let data = folder.appendingPathComponent("test_data_set_0")
        let directory = try CommandRunner.scratchDirectory()
        var words = ["run", folder.appendingPathComponent("model.onnx").path, "--backend", "gpu", "--profile", "--output",
                     "y=\(directory)/y.npy"]
        for (i, input) in testCase.inputs.enumerated() {
            words += ["--input", "\(input)=\(data.appendingPathComponent("input_\(i).pb").path)"]
        }
        let runner = CommandRunner()
        try #require(runner.run(words) == 0, "\(runner.error)")
        #expect(runner.out.contains("scores (layerkit.Attention)  GPU"), "\(runner.out)")
        let y = try Tensor(npyFile: "\(directory)/y.npy")
        let reference = try TensorFiles.readTyped(data.appendingPathComponent("output_0.pb").path).doubles()
        #expect(y.count == reference.count)
        let values = zip(y.values.map(Double.init), reference)
        let wrongNaN = values.filter { $0.isNaN != $1.isNaN }.count
        #expect(wrongNaN == 0, "\(testCase.name): \(wrongNaN) values NaN in one of Y and onnxruntime's output only")
        let worst = values.filter { !$1.isNaN }.map { abs($0 - $1) / max(1, abs($1)) }.max() ?? 0
        #expect(worst <= Self.tolerance, "\(testCase.name): \(worst)")
        // Only the unguarded fixture has NaN rows: query 4 of each of its 2 x 3 heads, 6 values each.
        let referenceNaNs = reference.filter(\.isNaN).count
        #expect(referenceNaNs == (testCase.name == "older_mul_constant_mask_nan_row" ? 36 : 0), "\(testCase.name)")
    }
}
