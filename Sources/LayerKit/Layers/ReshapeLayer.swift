import Foundation

/// A layer that gives its input a new shape with the same elements in the
/// same row-major order: ONNX Reshape and Flatten (and any other op that
/// only reshapes: Squeeze, Unsqueeze), the output shape already resolved
/// by the converter.
public final class ReshapeLayer: ElementMovingLayer, Sendable {
    /// The output shape.
    public let outputShape: [Int]
    /// The op this layer stands for ("Reshape", "Flatten", ...).
    public let layerName: String
    /// The pipeline `prepare` made on each context.
    private let gpuKernel = PerContext<GPUKernel<ReshapeConstants>>()

    /// A reshape to `outputShape` (no negative extents), named after its op.
    public init(outputShape: [Int], name: String = "Reshape") throws {
        guard outputShape.allSatisfy({ $0 >= 0 }) else {
            throw LayerKitError.invalidParameter("\(name): output shape \(outputShape) has a negative extent")
        }
        self.outputShape = outputShape
        layerName = name
    }

    /// `outputShape`; throws unless the input has as many elements.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let count = try Tensor.elementCount(of: inputShapes[0])
        guard try Tensor.elementCount(of: outputShape) == count else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): cannot reshape \(Tensor.describe(inputShapes[0])) (\(count) elements) to \(Tensor.describe(outputShape))")
        }
        return [outputShape]
    }

    /// A copy of the elements.
    func moveElements<Element>(inputs: [UnsafeBufferPointer<Element>], inputShapes: [[Int]],
                               outputs: [UnsafeMutableBufferPointer<Element>]) throws {
        _ = try outputShapes(forInputShapes: inputShapes)
        guard let source = inputs[0].baseAddress, let destination = outputs[0].baseAddress else { return }
        destination.update(from: source, count: min(inputs[0].count, outputs[0].count))
    }

    public var hasGPUImplementation: Bool { true }

    /// Creates the pipeline on `context`, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try kernel(on: context) }

    private func kernel(on context: GPUContext) throws -> GPUKernel<ReshapeConstants> {
        try gpuKernel.value(on: context) { try BuiltInShaders.reshape.kernel(on: context) }
    }

    /// `Shaders/reshape.comp`: each output lane loads the input lane of the
    /// same row-major index.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1, inputs[0].count == outputs[0].count else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image and 1 output image of as many elements")
        }
        let (input, output) = (inputs[0], outputs[0])
        guard output.count <= Int(UInt32.max) else {
            throw LayerKitError.shapeMismatch("\(layerName): \(output.count) elements exceed the shader's 32-bit indices")
        }
        let constants = ReshapeConstants(shape: output.shapeConstants, inputWidth: UInt32(input.width),
                                         inputHeight: UInt32(input.height), inputChannels: UInt32(input.featureChannels))
        try commandBuffer.dispatch(kernel(on: commandBuffer.context), images: [input, output], constants: constants,
                                   threads: output.threads)
    }
}
