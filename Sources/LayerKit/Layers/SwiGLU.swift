import Foundation

/// ONNX SwiGLU (opset 28): the gate A through ONNX's Swish, times the value
/// B, `Y = A * sigmoid(alpha * A) * B`, A and B of one shape (ONNX does not
/// broadcast them). On the CPU only.
public final class SwiGLU: Layer, Sendable {
    /// The slope inside the gate's sigmoid.
    public let alpha: Float

    /// Throws unless `alpha` is finite.
    public init(alpha: Float = 1) throws {
        guard alpha.isFinite else { throw LayerKitError.invalidParameter("SwiGLU: alpha must be finite, got \(alpha)") }
        self.alpha = alpha
    }

    public var layerName: String { "SwiGLU" }

    /// The inputs' one shape; throws when A and B differ.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 2, layer: layerName)
        guard inputShapes[0] == inputShapes[1] else {
            throw LayerKitError.shapeMismatch("\(layerName): A \(Tensor.describe(inputShapes[0])) and B "
                                              + "\(Tensor.describe(inputShapes[1])) must have one shape (no broadcasting)")
        }
        return [inputShapes[0]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        let (a, b, y, alpha) = (inputs[0], inputs[1], outputs[0], alpha)
        forEachChunk(count: y.count, threadCount: CPUThreads.current) { range in
            for i in range {
                let gate = a.dataPointer[i]
                y.dataPointer[i] = gate / (1 + exp(-alpha * gate)) * b.dataPointer[i]
            }
        }
    }
}
