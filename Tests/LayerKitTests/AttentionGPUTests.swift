import Foundation
import Testing
@testable import LayerKit

/// Attention's GPU kernel (Shaders/attention.comp) on the reference cases of
/// Fixtures/onnx-cases/attention: onnxruntime's outputs, each checked against
/// a float64 numpy form of the spec by Scripts/onnx_cases/attention.py, from
/// fp16-exact inputs. The node must run on the GPU (the scores output aside,
/// which stays on the CPU with its reason), and every output must be within
/// the parity tolerance `1e-3 max(1, |ref|)` of that reference: the fp16
/// store of Y alone costs up to 4.9e-4 of it, the "fp16 twin" error.
/// (ONNXCaseTests holds the same cases to the CPU on fp16-rounded inputs.)
@Suite(.enabled(if: TestGPU.isEnabled)) struct AttentionGPUTests {
    static let root = ONNXCaseTests.root.appendingPathComponent("attention")

    /// Every Attention case of the family.
    static let cases: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [])
        .filter { $0.hasPrefix("attention_") }.sorted()

    static let gpu = Result { try Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in }) }

    @Test func theCasesAreFound() { #expect(AttentionGPUTests.cases.count >= 10) }

    /// Head sizes past 128 (the shader's arrays), more keys than lavapipe's
    /// loop limit lets the kernel run and the scores output stay on the CPU,
    /// each with its reason; head size 128 and 2,048 keys of it do not.
    @Test func whatStaysOnTheCPUSaysWhy() throws {
        let layer = try Attention(options: Attention.Options())
        let (largest, tooLarge) = ([1, 2, 5, 128], [1, 2, 5, 129])
        #expect(layer.whyNotGPU(inputShapes: [largest, largest, largest], outputShapes: []) == nil)
        let why = layer.whyNotGPU(inputShapes: [tooLarge, tooLarge, tooLarge], outputShapes: [])
        #expect(why?.contains("129") == true, "\(why ?? "nil")")
        let (query, longest, tooLong) = ([1, 2, 5, 128], [1, 2, 2048, 128], [1, 2, 8000, 128])
        #expect(layer.whyNotGPU(inputShapes: [query, longest, longest], outputShapes: []) == nil)
        let loops = layer.whyNotGPU(inputShapes: [query, tooLong, tooLong], outputShapes: [])
        #expect(loops?.contains("8000 keys") == true && loops?.contains("65535") == true, "\(loops ?? "nil")")
        var options = Attention.Options()
        options.outputCount = 4
        let scores = try Attention(options: options).whyNotGPU(inputShapes: [largest, largest, largest], outputShapes: [])
        #expect(scores?.contains("scores output") == true, "\(scores ?? "nil")")
    }

    @Test(arguments: cases)
    func runsOnTheGPUWithinTheParityToleranceOfFloat64(_ name: String) throws {
        let folder = AttentionGPUTests.root.appendingPathComponent(name)
        let model = try Model(contentsOf: folder.appendingPathComponent("model.onnx"), backend: AttentionGPUTests.gpu.get())
        let data = folder.appendingPathComponent("test_data_set_0")
        var inputs: [String: Tensor] = [:]
        for (i, input) in model.inputs.enumerated() {
            inputs[input.name] = try ONNXTestCase.tensor(data.appendingPathComponent("input_\(i).pb"))
        }
        let results = try model.predict(inputs: inputs)
        let attention = try #require(model.nodes.first { $0.opType == "Attention" })
        if model.outputs.contains(where: { $0.name == "qk_matmul_output" }) {
            #expect(attention.placement?.isGPU == false)
            #expect(attention.cpuReason?.contains("scores output") == true, "\(attention.cpuReason ?? "no reason")")
            return
        }
        #expect(attention.placement == .gpu, "\(name): \(attention.cpuReason ?? "")")
        for (i, output) in model.outputs.enumerated() {
            let reference = try ONNXTestCase.tensor(data.appendingPathComponent("output_\(i).pb"))
            let y = try #require(results[output.name])
            #expect(y.shape == reference.shape)
            var worst = 0.0
            for (value, expected) in zip(y.values, reference.values) {
                worst = max(worst, ONNXTestCase.errorRatio(value, expected, parity: true))
            }
            #expect(worst <= 1, "\(name) \(output.name): \(worst)x the tolerance")
        }
    }
}
