import Foundation

/// ONNX CausalConvWithState (opset 27): per batch item and channel, a
/// causal depthwise 1-D convolution continued from a carried state. The
/// `k - 1` values before the input are the past state (zeros without one);
/// `y[t] = bias[c] + sum_i weight[c, 0, i] * padded[t + i]`, then with
/// `silu` (or its alias `swish`) `y * sigmoid(y)`. The second output, the
/// present state, is the padded sequence's last `k - 1` values.
///
/// Inputs: X `[batch, channels, length]`, weight `[channels, 1, k]`, then
/// the optional bias `[channels]` and past state `[batch, channels, k - 1]`
/// (`hasBias`, `hasPast`). On the CPU only, sums in double precision.
public final class CausalConvWithState: Layer, Sendable {
    public let hasBias: Bool
    public let hasPast: Bool
    /// Whether SiLU follows the convolution.
    public let silu: Bool

    public init(hasBias: Bool, hasPast: Bool, silu: Bool) {
        (self.hasBias, self.hasPast, self.silu) = (hasBias, hasPast, silu)
    }

    public var layerName: String { "CausalConvWithState" }

    /// Y as X, and the present state `[batch, channels, k - 1]`.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 2 + (hasBias ? 1 : 0) + (hasPast ? 1 : 0), layer: layerName)
        let (x, weight) = (inputShapes[0], inputShapes[1])
        guard x.count == 3 else { throw LayerKitError.shapeMismatch("\(layerName): input \(Tensor.describe(x)) must be 3-D") }
        guard weight.count == 3, weight[0] == x[1], weight[1] == 1, weight[2] >= 1 else {
            throw LayerKitError.shapeMismatch("\(layerName): weight \(Tensor.describe(weight)) must be [channels, 1, k] with "
                                              + "\(x[1]) channels and k >= 1")
        }
        let state = [x[0], x[1], weight[2] - 1]
        if hasBias, inputShapes[2] != [x[1]] {
            throw LayerKitError.shapeMismatch("\(layerName): bias \(Tensor.describe(inputShapes[2])) must be [\(x[1])]")
        }
        if hasPast, inputShapes[inputShapes.count - 1] != state {
            throw LayerKitError.shapeMismatch("\(layerName): past_state \(Tensor.describe(inputShapes[inputShapes.count - 1])) "
                                              + "must be \(Tensor.describe(state))")
        }
        return [x, state]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shapes = try outputShapes(forInputShapes: inputs.map(\.shape))
        guard outputs.map(\.shape) == shapes else {
            throw LayerKitError.shapeMismatch("\(layerName): the outputs must be of shapes "
                                              + shapes.map(Tensor.describe).joined(separator: ", "))
        }
        let (x, weight, y, present) = (inputs[0], inputs[1], outputs[0], outputs[1])
        let bias = hasBias ? inputs[2] : nil, past = hasPast ? inputs[inputs.count - 1] : nil
        let (channels, length, taps, silu) = (x.shape[1], x.shape[2], weight.shape[2], silu)
        let carried = taps - 1
        forEachChunk(count: x.shape[0] * channels, chunkSize: max(1, defaultChunkSize / max(1, length * taps)),
                     threadCount: CPUThreads.current) { range in
            for row in range {
                let c = row % channels
                let (input, output, kernel) = (x.dataPointer + row * length, y.dataPointer + row * length,
                                               weight.dataPointer + c * taps)
                let state = past.map { $0.dataPointer + row * carried }
                // Position p of the padded sequence: the carried state, then the input.
                func padded(_ p: Int) -> Float { p < carried ? state?[p] ?? 0 : input[p - carried] }
                for t in 0..<length {
                    var sum = Double(bias?.dataPointer[c] ?? 0)
                    for i in 0..<taps { sum += Double(kernel[i]) * Double(padded(t + i)) }
                    let value = Float(sum)
                    output[t] = silu ? value / (1 + exp(-value)) : value
                }
                for i in 0..<carried { present.dataPointer[row * carried + i] = padded(length + i) }
            }
        }
    }
}
