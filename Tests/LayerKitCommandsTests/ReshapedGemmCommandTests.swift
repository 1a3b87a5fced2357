import Foundation
import LayerKit
import Testing

/// `layerkit run --backend gpu --profile` on GPT-2's Conv1D as exporters
/// write it (the `math/gemm_reshaped_rank3` fixture: Reshape of `[1, 520,
/// 16]` to `[520, 16]`, Gemm, Reshape back). As a matrix the 520 rows are
/// 2,080 image layers, past lavapipe's 2,048, so the three steps ran on the
/// CPU; fused into one step on the rank-3 value they run on the GPU, and
/// the output written is onnxruntime's within the GPU's tolerance
/// (Scripts/onnx_cases/math.py).
struct ReshapedGemmCommandTests {
    static let folder = ModelCommandTests.fixtures.deletingLastPathComponent()
        .appendingPathComponent("onnx-cases/math/gemm_reshaped_rank3")

    @Test func runPutsTheWholeProductOnTheGPU() throws {
        let data = Self.folder.appendingPathComponent("test_data_set_0")
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        #expect(runner.run(["run", Self.folder.appendingPathComponent("model.onnx").path, "--backend", "gpu", "--profile",
                            "--input", "x=" + data.appendingPathComponent("input_0.pb").path,
                            "--output", "y=\(directory)/y.pb"]) == 0, "\(runner.error)")
        #expect(runner.out.contains("Gemm_1 (Gemm)  GPU        1"), "\(runner.out)")
        #expect(!runner.out.contains("(Reshape)") && !runner.error.contains("runs on the CPU"), "\(runner.out)\(runner.error)")
        let y = try TypedTensor(tensorProto: [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(directory)/y.pb"))), source: "y.pb")
            .float32Tensor()
        let file = data.appendingPathComponent("output_0.pb")
        let expected = try TypedTensor(tensorProto: [UInt8](Data(contentsOf: file)), source: file.path).float32Tensor()
        #expect(y.shape == [1, 520, 12] && y.shape == expected.shape)
        // fp16 images: the node tests' GPU tolerance (Docs/CONFORMANCE.md).
        for (a, e) in zip(y.values, expected.values) { #expect(abs(a - e) <= 2e-3 * max(1, abs(e)), "\(a) vs \(e)") }
    }
}
