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

    /// The loop count is llvmpipe's (`Attention.loopIterations`): at head
    /// size 64, 8,448 keys are the most the loop limiter lets the kernel
    /// run. They run on the GPU and match a float64 reference, the last
    /// key (twice the query, values 1, the rest near 0) holding a quarter
    /// of the weight, so a loop ended early shows; 8,456 keys stay on the
    /// CPU with the reason.
    @Test func theMostKeysTheLoopLimitLetsRunAreRight() throws {
        let (keys, size) = (8448, 64)
        let layer = try Attention(options: Attention.Options())
        let over = [1, 1, keys + 8, size]
        let why = layer.whyNotGPU(inputShapes: [[1, 1, 4, size], over, over], outputShapes: [])
        #expect(why?.contains("loop iterations") == true, "\(why ?? "nil")")
        let query = (0..<size).map { fp16Rounded(sin(Float($0) * 1.3)) }
        var k = (0..<keys * size).map { fp16Rounded(0.25 * sin(Float($0) * 0.7)) }
        var v = (0..<keys * size).map { fp16Rounded(0.01 * cos(Float($0) * 0.3)) }
        for d in 0..<size { (k[(keys - 1) * size + d], v[(keys - 1) * size + d]) = (2 * query[d], 1) }
        let q = Array((0..<4).map { _ in query }.joined())
        let run = try AttentionGPUTests.gpu.get().run(layer, inputs: [
            Tensor(shape: [1, 1, 4, size], values: q), Tensor(shape: [1, 1, keys, size], values: k),
            Tensor(shape: [1, 1, keys, size], values: v)])
        #expect(run.placement == .gpu)
        // Float64 softmax(q k / 8) v for the one query (the 4 rows are equal).
        let scores = (0..<keys).map { j in (0..<size).reduce(0.0) { $0 + Double(query[$1]) * Double(k[j * size + $1]) } / 8 }
        let top = scores.max()!
        let weights = scores.map { exp($0 - top) }
        let total = weights.reduce(0, +)
        #expect(weights[keys - 1] / total > 0.2)
        var worst = 0.0
        for row in 0..<4 {
            for e in 0..<size {
                let expected = (0..<keys).reduce(0.0) { $0 + weights[$1] * Double(v[$1 * size + e]) } / total
                worst = max(worst, abs(Double(run.outputs[0][row * size + e]) - expected) / max(1, abs(expected)))
            }
        }
        #expect(worst <= 1e-3, "\(worst)")
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
