import Foundation
import Testing
@testable import LayerKit

/// Issue 27 through the CLI: CPU kernels whose fast path looked like the
/// identity, integers from a model file that trapped while importing, and
/// the message for a zero-size input. Expected values are onnxruntime's
/// (Scripts/onnx_cases/layout.py); the hostile models are
/// Scripts/generate_hostile_models.py's.
struct HostileKernelTests {
    let directory: String
    init() throws { directory = try CommandRunner.scratchDirectory() }

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("LayerKitTests/Fixtures")

    static func layoutCase(_ name: String) -> URL {
        fixtures.appendingPathComponent("onnx-cases/layout/\(name)")
    }

    static func hostile(_ name: String) -> String { fixtures.appendingPathComponent("hostile/\(name)").path }

    // MARK: Resize shrinks that looked like the identity

    /// A shrink whose table maps output index x to input x: the skipped pass
    /// left the axis at its input extent (a heap overrun, or zeros).
    @Test(arguments: ["resize_shrink_to_1_asymmetric", "resize_shrink_to_1_align_corners",
                      "resize_shrink_pytorch_half_pixel_3x1", "resize_shrink_64_to_63_floor"])
    func runResizesAShrinkAsOnnxRuntime(_ name: String) throws {
        let folder = Self.layoutCase(name)
        let input = try ONNXTestCase.tensor(folder.appendingPathComponent("test_data_set_0/input_0.pb"))
        let expected = try ONNXTestCase.tensor(folder.appendingPathComponent("test_data_set_0/output_0.pb"))
        try writeNPY(input.values, shape: input.shape, to: "\(directory)/x.npy")
        let runner = CommandRunner()
        #expect(runner.run(["run", folder.appendingPathComponent("model.onnx").path, "--input", "\(directory)/x.npy",
                            "--output", "y=\(directory)/y.npy", "--backend", "cpu"]) == 0, "\(runner.error)")
        let output = try Tensor(npyFile: "\(directory)/y.npy")
        #expect(output.shape == expected.shape)
        for (i, (y, reference)) in zip(output.values, expected.values).enumerated() {
            #expect(abs(y - reference) <= 1e-5 * max(1, abs(reference)), "\(name)[\(i)]: \(y), onnxruntime \(reference)")
        }
    }

    // MARK: Integers from the file

    /// `abs(Int64.min)` trapped while importing: now the pads are refused,
    /// by node and attribute in run's error and in inspect's table.
    @Test func padsOfInt64MinAreRefusedNamingTheNode() throws {
        try writeNPY(Array(repeating: 1, count: 24), shape: [1, 2, 3, 4], to: "\(directory)/x.npy")
        let run = CommandRunner()
        #expect(run.run(["run", Self.hostile("pad_min.onnx"), "--input", "\(directory)/x.npy",
                         "--output", "y0=\(directory)/y.npy", "--backend", "cpu"]) == 1)
        #expect(run.error.contains("node 'pad_min' (Pad): pads [0, 0, -9223372036854775808"), "\(run.error)")
        let inspect = CommandRunner()
        #expect(inspect.run(["inspect", Self.hostile("pad_min.onnx"), "--backend", "cpu"]) == 1)
        #expect(inspect.out.contains("Pad: pads [0, 0, -9223372036854775808"), "\(inspect.out)")
    }

    /// Every hostile model loads or is refused with a reason in inspect's
    /// table: none traps (an overflow here ends the whole test process).
    @Test func extremeIntegersInEveryOpLoadOrAreRefused() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.hostile(""))
            .filter { $0.hasSuffix(".onnx") && $0 != "zero_batch.onnx" }.sorted()
        #expect(names.count > 100)
        for file in names {
            let runner = CommandRunner()
            let status = runner.run(["inspect", Self.hostile(file), "--backend", "cpu"])
            #expect(status == 0 || (status == 1 && runner.out.contains("reason")), "\(file): \(runner.out) \(runner.error)")
        }
    }

    /// Integer ops folded at load (shape arithmetic) on values from the file:
    /// an overflow is refused by name, never wrapped into a wrong shape
    /// (ReduceProd wrapped MAX * 4 * 2^62 to 0) nor trapped.
    @Test func foldedIntegerOverflowIsRefusedByName() throws {
        let expected = [
            "fold_add": "Add: integer Add overflows Int64", "fold_sub": "Sub: integer Sub overflows Int64",
            "fold_mul": "Mul: integer Mul overflows Int64", "fold_div": "Div: integer Div overflows Int64",
            "fold_neg": "Neg: integer Neg overflows Int64", "fold_abs": "Abs: integer Abs overflows Int64",
            "fold_reduceprod": "ReduceProd: integer ReduceProd overflows Int64",
            "fold_range_full": "Range: would make more than", "fold_range_step": "Range: would make more than",
            "fold_constantofshape": "ConstantOfShape: shape 1099511627776x1099511627776 has too many elements",
        ]
        for (name, reason) in expected.sorted(by: { $0.key < $1.key }) {
            let runner = CommandRunner()
            #expect(runner.run(["inspect", Self.hostile("\(name).onnx"), "--backend", "cpu"]) == 1, "\(name)")
            #expect(runner.out.contains(reason), "\(name): \(runner.out)")
        }
    }

    // MARK: Zero-size inputs

    /// A zero batch runs to a zero-size output, as in onnxruntime: the
    /// input is a value of the plan, and a Relu of nothing computes nothing.
    @Test func aZeroBatchRunsToAZeroSizeOutput() throws {
        try writeNPY([], shape: [0, 3, 4, 4], to: "\(directory)/x.npy")
        let runner = CommandRunner()
        #expect(runner.run(["run", Self.hostile("zero_batch.onnx"), "--input", "\(directory)/x.npy",
                            "--output", "y0=\(directory)/y.npy", "--backend", "cpu"]) == 0, "\(runner.error)")
        #expect(try Tensor(npyFile: "\(directory)/y.npy").shape == [0, 3, 4, 4])
        // Control: a batch of 1 runs.
        try writeNPY(Array(repeating: -1, count: 48), shape: [1, 3, 4, 4], to: "\(directory)/x1.npy")
        let control = CommandRunner()
        #expect(control.run(["run", Self.hostile("zero_batch.onnx"), "--input", "\(directory)/x1.npy",
                             "--output", "y0=\(directory)/y1.npy", "--backend", "cpu"]) == 0, "\(control.error)")
        #expect(try Tensor(npyFile: "\(directory)/y1.npy").values == Array(repeating: 0, count: 48))
    }
}
