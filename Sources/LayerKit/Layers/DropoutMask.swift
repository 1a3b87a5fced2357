/// ONNX `Dropout` at inference with its `mask` output: the input passes
/// through unchanged, and the mask, every element kept, is all true: 1.0 as
/// LayerKit's Float32 values. (A Dropout without a mask output is no layer
/// at all: its output is its input's value.) CPU only: two copies.
public final class DropoutMask: Layer, Sendable {
    public init() {}

    public var layerName: String { "Dropout" }

    /// The input's shape, twice: the output and the mask.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        return [inputShapes[0], inputShapes[0]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        guard outputs.count == 2, outputs.allSatisfy({ $0.shape == shape }) else {
            throw LayerKitError.shapeMismatch("Dropout: the outputs must be two tensors of shape \(Tensor.describe(shape))")
        }
        outputs[0].dataPointer.update(from: inputs[0].dataPointer, count: inputs[0].count)
        outputs[1].dataPointer.update(repeating: 1, count: outputs[1].count)
    }
}
