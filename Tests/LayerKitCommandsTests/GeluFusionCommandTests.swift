import Foundation
import LayerKit
import Testing

/// `layerkit run --profile` on GPT-2's tanh GELU as the exporters write it
/// (the `gelu_fusion/tanh_pow` fixture: Pow, three Muls, two Adds, Tanh):
/// the profile shows one `Gelu` step named after the Tanh node and none of
/// the replaced nodes, and the output written is onnxruntime's
/// (Scripts/onnx_cases/gelu_fusion.py) within the fixture's bound.
struct GeluFusionCommandTests {
    static let folder = ModelCommandTests.fixtures.deletingLastPathComponent()
        .appendingPathComponent("onnx-cases/gelu_fusion/tanh_pow")

    @Test func runShowsOneGeluStepAndWritesOnnxRuntimesOutput() throws {
        let data = Self.folder.appendingPathComponent("test_data_set_0")
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        #expect(runner.run(["run", Self.folder.appendingPathComponent("model.onnx").path, "--backend", "cpu", "--profile",
                            "--input", "x=" + data.appendingPathComponent("input_0.pb").path,
                            "--output", "y=\(directory)/y.pb"]) == 0, "\(runner.error)")
        #expect(runner.out.contains("tanh (Gelu)"), "\(runner.out)")
        for replaced in ["(Tanh)", "(Pow)", "(Mul)", "(Add)"] {
            #expect(!runner.out.contains(replaced), "\(replaced) in \(runner.out)")
        }
        let y = try TypedTensor(tensorProto: [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(directory)/y.pb"))), source: "y.pb")
            .float32Tensor()
        let file = data.appendingPathComponent("output_0.pb")
        let expected = try TypedTensor(tensorProto: [UInt8](Data(contentsOf: file)), source: file.path).float32Tensor()
        #expect(y.shape == [2, 3, 29] && y.shape == expected.shape)
        for (a, e) in zip(y.values, expected.values) { #expect(abs(a - e) <= 1e-6 * max(1, abs(e)), "\(a) vs \(e)") }
    }
}
