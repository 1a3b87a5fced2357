import Foundation
import LayerKit
import Testing
@testable import LayerKitCommands

/// `layerkit run --backend gpu` on Attention reference cases
/// (Fixtures/onnx-cases/attention: onnxruntime's outputs, checked against a
/// float64 numpy form of the spec by Scripts/onnx_cases/attention.py): every
/// output within the parity tolerance `1e-3 max(1, |ref|)` of the reference,
/// and no notice that the Attention node ran on the CPU.
struct AttentionRunCommandTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("LayerKitTests/Fixtures/onnx-cases/attention")

    /// A case's graph inputs and outputs, in the order of its .pb files.
    struct Case: Sendable, CustomStringConvertible {
        let name: String
        let inputs: [String]
        let outputs: [String]
        var description: String { name }
    }

    static let cases = [
        Case(name: "attention_3d_past_present_gqa_softcap", inputs: ["Q", "K", "V", "past_key", "past_value"],
             outputs: ["Y", "present_key", "present_value"]),
        Case(name: "attention_gqa_causal_rank3_mask_130x100", inputs: ["Q", "K", "V"], outputs: ["Y"]),
        Case(name: "attention_padding_mask_input_head80", inputs: ["Q", "K", "V", "attn_mask"], outputs: ["Y"]),
    ]

    @Test(.enabled(if: gpuTestsEnabled), arguments: cases)
    func runsOnTheGPUWithinTheParityTolerance(_ testCase: Case) throws {
        let data = Self.root.appendingPathComponent(testCase.name).appendingPathComponent("test_data_set_0")
        let directory = try CommandRunner.scratchDirectory()
        var words = ["run", Self.root.appendingPathComponent(testCase.name).appendingPathComponent("model.onnx").path,
                     "--backend", "gpu"]
        for (i, input) in testCase.inputs.enumerated() {
            words += ["--input", "\(input)=\(data.appendingPathComponent("input_\(i).pb").path)"]
        }
        for output in testCase.outputs { words += ["--output", "\(output)=\(directory)/\(output).npy"] }
        let runner = CommandRunner()
        try #require(runner.run(words) == 0, "\(runner.error)")
        #expect(!runner.error.contains("Attention"), "\(runner.error)")
        for (i, output) in testCase.outputs.enumerated() {
            let y = try Tensor(npyFile: "\(directory)/\(output).npy")
            let reference = try TensorFiles.readTyped(data.appendingPathComponent("output_\(i).pb").path)
            #expect(y.shape == reference.shape)
            var worst = 0.0
            for (a, e) in zip(y.values, reference.doubles()) { worst = max(worst, abs(Double(a) - e) / max(1, abs(e))) }
            #expect(worst <= 1e-3, "\(testCase.name) \(output): \(worst)")
        }
    }
}
