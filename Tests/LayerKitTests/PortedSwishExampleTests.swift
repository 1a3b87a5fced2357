import Foundation
import Testing
import LayerKit

// The README's "Port a Core ML custom layer" example, verbatim: if this file stops
// compiling or passing, the README is wrong.

// README-EXAMPLE-BEGIN
final class MySwish: CustomLayer {
    static let name = "MySwish"
    // The Metal kernel's body, `x / (1.0f + exp(-x))`, as GLSL over a vec4 of four channels.
    static let kernel = PerElementKernel(name: "MySwish", body: "x / (1.0 + exp(-x))")

    init(parameters: [String: Any]) throws {}
    func setWeightData(_ weights: [Data]) throws {}
    func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] { inputShapes }

    // CPU: the article's first version; the `Swish` layer's `evaluate` is the fast one.
    func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        for (input, output) in zip(inputs, outputs) {
            for i in 0..<input.count { output[i] = input[i] / (1 + exp(-input[i])) }
        }
    }

    // GPU: one dispatch per image, like `encoder.dispatch(pipeline:texture:)`.
    var hasGPUImplementation: Bool { true }
    func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        for (input, output) in zip(inputs, outputs) {
            try commandBuffer.dispatch(Self.kernel, input: input, output: output)
        }
    }
}
// README-EXAMPLE-END

@Suite(.enabled(if: TestGPU.isEnabled))
struct PortedSwishExampleTests {
    @Test func thePortRunsOnBothBackendsAndAgrees() throws {
        LayerRegistry.shared.register(MySwish.self)
        let layer = try LayerRegistry.shared.makeLayer(named: "myswish")
        let x = try Tensor.uniform(shape: [1, 6, 16, 16], in: -10...10, seed: 9).roundedToHalf()
        let gpu = try Backend(computeUnits: .gpu, context: TestGPU.get()).run(layer, inputs: [x])
        let cpu = try Backend(computeUnits: .cpuOnly).run(layer, inputs: [x])
        #expect(gpu.placement == .gpu)
        #expect(try ParityReport(gpu: gpu.outputs[0], cpu: cpu.outputs[0]).passed)
        // ... and the port computes Swish: same as the built-in layer.
        let builtin = try Backend(computeUnits: .cpuOnly).run(try Swish(), inputs: [x])
        for i in 0..<x.count {
            #expect(abs(cpu.outputs[0][i] - builtin.outputs[0][i]) <= 1e-5 * max(1, abs(builtin.outputs[0][i])))
        }
    }
}

struct DocumentedExampleTests {
    /// A document shows the code between an example file's README-EXAMPLE
    /// markers, character for character.
    @Test(arguments: [("PortedSwishExampleTests.swift", "README.md"),
                      ("CustomLayerModelExampleTests.swift", "Docs/MODELS.md"),
                      ("CustomKernelExampleTests.swift", "Docs/CUSTOM_KERNELS.md"),
                      ("DocCSwishExampleTests.swift", "Sources/LayerKit/LayerKit.docc/LayerKit.md")])
    func theDocumentShowsTheExample(_ fileName: String, _ document: String) throws {
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let root = tests.deletingLastPathComponent().deletingLastPathComponent()
        let source = try String(contentsOf: tests.appendingPathComponent(fileName), encoding: .utf8)
        let text = try String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)
        let begin = try #require(source.range(of: "// README-EXAMPLE-BEGIN\n"))
        let end = try #require(source.range(of: "// README-EXAMPLE-END"))
        let example = String(source[begin.upperBound..<end.lowerBound])
        #expect(text.contains("```swift\n" + example + "```"))
    }
}
