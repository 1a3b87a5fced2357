import Foundation
import Testing
import LayerKit

// The custom-layer recipe of the API reference's landing page
// (Sources/LayerKit/LayerKit.docc/LayerKit.md), verbatim: DocumentedExampleTests
// holds the page to the code between the markers.

// README-EXAMPLE-BEGIN
final class BetaSwish: CustomLayer {
    static let name = "BetaSwish"
    // The GPU body: one GLSL expression over `x`, a vec4 of four channels; `param(0)` is beta.
    static let kernel = PerElementKernel(name: "BetaSwish", body: "x / (1.0 + exp(-param(0) * x))")
    let beta: Float

    init(parameters: [String: Any]) throws {
        let reader = LayerParameters(parameters, layer: Self.name)
        beta = try reader.float("beta", default: 1)
        try reader.requireOnly(["beta"])
    }
    func setWeightData(_ weights: [Data]) throws {}
    func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] { inputShapes }

    // CPU: x / (1 + exp(-beta * x)), element by element.
    func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        for (input, output) in zip(inputs, outputs) {
            for i in 0..<input.count { output[i] = input[i] / (1 + exp(-beta * input[i])) }
        }
    }

    // GPU: one dispatch per image, beta passed as the kernel's parameter 0.
    var hasGPUImplementation: Bool { true }
    func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        for (input, output) in zip(inputs, outputs) {
            try commandBuffer.dispatch(Self.kernel, input: input, output: output, parameters: [beta])
        }
    }
}
// README-EXAMPLE-END

@Suite(.enabled(if: TestGPU.isEnabled))
struct DocCSwishExampleTests {
    @Test func theRecipeRunsOnBothBackendsAndAgrees() throws {
        let layer = try BetaSwish(parameters: ["beta": 1.5])
        let x = try Tensor.uniform(shape: [1, 6, 16, 16], in: -10...10, seed: 9).roundedToHalf()
        let gpu = try Backend(computeUnits: .gpu, context: TestGPU.get()).run(layer, inputs: [x])
        let cpu = try Backend(computeUnits: .cpuOnly).run(layer, inputs: [x])
        #expect(gpu.placement == .gpu)
        #expect(try ParityReport(gpu: gpu.outputs[0], cpu: cpu.outputs[0]).passed)
        // ... and it computes the built-in Swish with the same beta.
        let builtin = try Backend(computeUnits: .cpuOnly).run(try Swish(beta: 1.5), inputs: [x])
        for i in 0..<x.count {
            #expect(abs(cpu.outputs[0][i] - builtin.outputs[0][i]) <= 1e-5 * max(1, abs(builtin.outputs[0][i])))
        }
    }
}
