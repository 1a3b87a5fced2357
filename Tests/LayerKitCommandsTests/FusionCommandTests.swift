import Foundation
import LayerKit
import Testing

/// `layerkit run --profile` on per-element patterns as the exporters write
/// them, which the importer fuses into one step: GPT-2's tanh GELU (the
/// `gelu_fusion/tanh_pow` fixture: Pow, three Muls, two Adds, Tanh) and
/// SiLU (`silu_fusion/silu`: Sigmoid, Mul). The profile shows the one fused
/// step and none of the replaced nodes, and the output written is the
/// fixture's reference (onnxruntime's, or float64 SiLU; the scripts in
/// Scripts/onnx_cases) within the fixture's bound.
struct FusionCommandTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let fixture: String
        /// The profile's row of the fused step: its node name and op type.
        let fusedRow: String
        let replaced: [String]
        let shape: [Int]
        var testDescription: String { fixture }
    }

    static let cases = [
        Case(fixture: "gelu_fusion/tanh_pow", fusedRow: "tanh (Gelu)", replaced: ["(Tanh)", "(Pow)", "(Mul)", "(Add)"],
             shape: [2, 3, 29]),
        Case(fixture: "silu_fusion/silu", fusedRow: "y (Swish)", replaced: ["(Sigmoid)", "(Mul)"], shape: [2, 3, 37]),
    ]

    @Test(arguments: cases)
    func runShowsOneFusedStepAndWritesTheReference(_ c: Case) throws {
        let folder = ModelCommandTests.fixtures.deletingLastPathComponent().appendingPathComponent("onnx-cases/\(c.fixture)")
        let data = folder.appendingPathComponent("test_data_set_0")
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        #expect(runner.run(["run", folder.appendingPathComponent("model.onnx").path, "--backend", "cpu", "--profile",
                            "--input", "x=" + data.appendingPathComponent("input_0.pb").path,
                            "--output", "y=\(directory)/y.pb"]) == 0, "\(runner.error)")
        #expect(runner.out.contains(c.fusedRow), "\(runner.out)")
        for replaced in c.replaced {
            #expect(!runner.out.contains(replaced), "\(replaced) in \(runner.out)")
        }
        let y = try TypedTensor(tensorProto: [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(directory)/y.pb"))), source: "y.pb")
            .float32Tensor()
        let file = data.appendingPathComponent("output_0.pb")
        let expected = try TypedTensor(tensorProto: [UInt8](Data(contentsOf: file)), source: file.path).float32Tensor()
        #expect(y.shape == c.shape && y.shape == expected.shape)
        for (a, e) in zip(y.values, expected.values) { #expect(abs(a - e) <= 1e-6 * max(1, abs(e)), "\(a) vs \(e)") }
    }
}
