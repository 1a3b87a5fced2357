import Foundation
import Testing
@testable import LayerKit

/// The models onnxruntime's own quantization tool made
/// (`Scripts/generate_quantized_fixtures.py`: a QDQ CNN, a QDQ and a
/// dynamically quantized transformer block), against onnxruntime's outputs,
/// measured in quanta: `max |y - ref| / quantum`, the quantum a QDQ
/// model's output scale, or for the dynamic block (whose output is float)
/// the step of its input's own dynamic quantization.
///
/// Why quanta, and why the bounds. onnxruntime runs the QDQ models in its
/// int8 kernels (QLinearConv, QLinearMatMul), requantizing each integer sum
/// with a float multiplier; LayerKit dequantizes the weights at load and
/// computes the float op in float32 (another order of sums), then
/// quantizes exactly. So a value within float32 rounding of a half-way
/// point between two quanta may round to the other one: one quantum at the
/// output, or at an activation whose step then moves the output by less.
/// The CPU bound is 1 quantum (measured: cnn_qdq 1, 80% of the elements
/// equal; mlp_qdq and mlp_dynamic 0, every element equal: MatMulInteger and
/// DynamicQuantizeLinear are exact). The GPU stores fp16 (about 3 digits)
/// between the ops (and at the output, a thousandth of it), which moves more
/// values across a rounding boundary, each by one step: 2 quanta for the QDQ
/// models (measured 1.00 and 1.01; their QuantizeLinear-DequantizeLinear
/// pairs run there as formulas), 1 step for the dynamic block (measured
/// 0.40). The bounds are in each case's `case.json`.
struct QuantizedModelTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/quantized")

    static let cases = ["cnn_qdq", "mlp_qdq", "mlp_dynamic"]

    /// A case's names, the output's quantum and the bounds in quanta.
    struct Case: Decodable {
        let inputs: [String]
        let outputs: [String]
        let quantum: Double
        let cpu: Double
        let gpu: Double
    }

    @Test(arguments: cases) func runsWithinItsBoundOnTheCPU(_ name: String) throws {
        try check(name, .cpuOnly)
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: cases) func runsWithinItsBoundOnTheGPU(_ name: String) throws {
        try check(name, .gpu)
    }

    /// Runs case `name` on `units` and holds its output to its bound in quanta.
    private func check(_ name: String, _ units: ComputeUnits) throws {
        let folder = Self.fixtures.appendingPathComponent(name)
        let description = try JSONDecoder().decode(Case.self, from: Data(contentsOf: folder.appendingPathComponent("case.json")))
        let backend = units == .gpu ? try ONNXCaseTests.gpu.get() : try ONNXCaseTests.cpu.get()
        let model = try Model(contentsOf: folder.appendingPathComponent("model.onnx"), backend: backend)
        var inputs: [String: Tensor] = [:]
        for input in description.inputs {
            inputs[input] = try Tensor(npyFile: folder.appendingPathComponent("\(input).npy").path)
        }
        let outputs = try model.predict(inputs: inputs)
        if units == .gpu, name.hasSuffix("_qdq") {
            // A QDQ model's activations stay on the device: their QuantizeLinear and DequantizeLinear are formulas.
            let onCPU = model.nodes.filter { $0.opType.hasSuffix("QuantizeLinear") && $0.placement?.isGPU == false }.map(\.name)
            #expect(onCPU.isEmpty, "\(name): \(onCPU) run on the CPU")
        }
        let bound = units == .gpu ? description.gpu : description.cpu
        for output in description.outputs {
            let y = try #require(outputs[output])
            let reference = try Tensor(npyFile: folder.appendingPathComponent("\(output).npy").path)
            #expect(y.shape == reference.shape, "\(name) \(output)")
            let off = zip(y.values, reference.values).map { abs(Double($0) - Double($1)) / description.quantum }.max() ?? 0
            #expect(off <= bound, "\(name) \(output) on \(units): \(off) quanta off onnxruntime's (bound \(bound))")
        }
    }
}
