import Foundation
import Testing
import LayerKit

// Docs/MODELS.md's "A custom layer inside a model" example, verbatim: if this
// file stops compiling or passing, Docs/MODELS.md is wrong.

// README-EXAMPLE-BEGIN
/// The op of an ONNX node `MyLayer` (domain `com.example`): y = gain * x.
final class MyLayer: CustomLayer {
    static let name = "MyLayer"   // the node's op_type
    let gain: Float

    // The node's attributes, as Core ML passes a layer's parameters.
    init(parameters: [String: Any]) throws {
        let reader = LayerParameters(parameters, layer: Self.name)
        gain = try reader.float("gain", default: 1)
        try reader.requireOnly(["gain"])
    }

    // The node's extra constant inputs (initializers), Float32 blobs: none here.
    func setWeightData(_ weights: [Data]) throws {
        guard weights.isEmpty else { throw LayerKitError.invalidWeights("MyLayer takes no weights") }
    }

    func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] { inputShapes }

    func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        for (input, output) in zip(inputs, outputs) {
            for i in 0..<input.count { output[i] = gain * input[i] }
        }
    }

    var hasGPUImplementation: Bool { true }
    func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        let kernel = PerElementKernel(name: "MyLayer", body: "x * param(0)")
        for (input, output) in zip(inputs, outputs) {
            try commandBuffer.dispatch(kernel, input: input, output: output, parameters: [gain])
        }
    }
}
// README-EXAMPLE-END

/// The fixture `custom_missing.onnx` holds one `MyLayer` node (gain 2): a
/// registry without the class refuses it; with it, the model runs.
struct CustomLayerModelExampleTests {
    static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/models/custom_missing.onnx")

    @Test(arguments: [ComputeUnits.cpuOnly, .gpu])
    func theRegisteredClassRunsTheNode(_ units: ComputeUnits) throws {
        if units != .cpuOnly, !TestGPU.isEnabled { return }
        let registry = LayerRegistry()
        #expect(throws: LayerKitError.self) { _ = try Model(contentsOf: Self.url, computeUnits: .cpuOnly, registry: registry) }
        registry.register(MyLayer.self)
        let backend = try Backend(computeUnits: units, context: units == .cpuOnly ? nil : try TestGPU.get())
        let model = try Model(contentsOf: Self.url, backend: backend, registry: registry)
        #expect(model.nodes.map(\.placement) == [units == .cpuOnly ? .cpu(reason: nil) : .gpu])
        let x = try Tensor.uniform(shape: [1, 4, 3, 3], in: -4...4, seed: 3).roundedToHalf()
        let y = try #require(try model.predict(inputs: ["x": x])["y"])
        for (out, value) in zip(y.values, x.values) { #expect(out == 2 * value) }
    }

    @Test func aFormulaRunsTheNodeToo() throws {
        let registry = LayerRegistry()
        try registry.register(formula: "gain * x", named: "MyLayer", parameters: ["gain": 1])
        let model = try Model(contentsOf: Self.url, computeUnits: .cpuOnly, registry: registry)
        let x = try Tensor.uniform(shape: [1, 4, 3, 3], in: -4...4, seed: 4)
        let y = try #require(try model.predict(inputs: ["x": x])["y"])
        for (out, value) in zip(y.values, x.values) { #expect(out == 2 * value) }
    }
}
