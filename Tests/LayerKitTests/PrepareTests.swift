import Testing
@testable import LayerKit

/// `prepare` makes a layer's pipelines and constant buffers; `encode` then
/// makes none, and a layer not prepared on a context prepares when encoded.
@Suite(.enabled(if: TestGPU.isEnabled))
struct PrepareTests {
    static func layers() throws -> [(Layer, [Int])] {
        let weights = try Tensor.uniform(shape: [6, 5, 3, 3], in: -1...1, seed: 4)
        return [
            (try Convolution(weights: weights, padding: .explicit([1, 1, 1, 1])), [2, 5, 4, 4]),
            (try Swish(beta: 0.5), [2, 5, 4, 4]),
            (try Softmax(axis: 1), [2, 5, 4, 4]),
            (BinaryLayer(.add), [2, 5, 4, 4]),
        ]
    }

    /// Encodes `layer` once on `context` (two inputs for a binary layer).
    static func encode(_ layer: Layer, shape: [Int], on context: GPUContext) throws {
        let inputs = try (0..<(layer is BinaryLayer ? 2 : 1)).map { _ in try context.makeSliceImage(shape: shape) }
        let outputShape = try layer.outputShapes(forInputShapes: inputs.map(\.shape))[0]
        let commands = try context.makeCommandBuffer()
        try layer.encode(commandBuffer: commands, inputs: inputs, outputs: [context.makeSliceImage(shape: outputShape)])
        try commands.commit()
        try commands.waitUntilCompleted()
    }

    @Test func encodeAfterPrepareCreatesNoPipeline() throws {
        for (layer, shape) in try Self.layers() {
            let context = try GPUContext(device: TestGPU.get().device)
            #expect(context.pipelineCount == 0)
            try layer.prepare(on: context, inputShapes: layer is BinaryLayer ? [shape, shape] : [shape])
            let prepared = context.pipelineCount
            #expect(prepared == 1, "\(layer.layerName)")
            try Self.encode(layer, shape: shape, on: context)
            #expect(context.pipelineCount == prepared, "\(layer.layerName)")
        }
    }

    /// One layer object on two contexts: each gets its own pipelines (and
    /// a convolution its own weight buffers), made by `encode` unprepared.
    @Test func aLayerSharedByTwoContextsPreparesOnEach() throws {
        for (layer, shape) in try Self.layers() {
            let first = try GPUContext(device: TestGPU.get().device)
            let second = try GPUContext(device: TestGPU.get().device)
            try Self.encode(layer, shape: shape, on: first)
            try Self.encode(layer, shape: shape, on: second)
            #expect(first.pipelineCount == 1 && second.pipelineCount == 1, "\(layer.layerName)")
        }
    }
}
