import Foundation

/// ONNX LRN, local response normalization across channels (AlexNet,
/// GoogLeNet): `y = x / (bias + alpha / size * square_sum)^beta`, where
/// `square_sum` at channel `c` sums `x^2` over channels
/// `c - floor((size - 1) / 2) ... c + ceil((size - 1) / 2)` that exist.
///
/// Any rank from 2 on the CPU; on the GPU for rank 2 to 4.
public final class LRN: Layer, Sendable {
    /// The window's extent in channels.
    public let size: Int
    public let alpha: Float
    public let beta: Float
    public let bias: Float
    /// The pipeline `prepare` made on each context.
    private let gpuKernel = PerContext<GPUKernel<LRNConstants>>()

    /// Throws unless `size` is positive (at most 2^20) and the other
    /// parameters are finite.
    public init(size: Int, alpha: Float = 1e-4, beta: Float = 0.75, bias: Float = 1) throws {
        guard (1...(1 << 20)).contains(size) else {
            throw LayerKitError.invalidParameter("LRN: size must be from 1 to \(1 << 20), got \(size)")
        }
        for (name, value) in [("alpha", alpha), ("beta", beta), ("bias", bias)] where !value.isFinite {
            throw LayerKitError.invalidParameter("LRN: \(name) must be finite, got \(value)")
        }
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.bias = bias
    }

    public var layerName: String { "LRN" }

    /// Channels below and above `c` in its window.
    private var before: Int { (size - 1) / 2 }
    private var after: Int { size / 2 }  // ceil((size - 1) / 2)

    /// The input's shape (rank 2 or more).
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        try LayerChecks.requireRank(inputShapes[0], in: 2...Int.max, layer: layerName)
        return [inputShapes[0]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        let (input, output) = (inputs[0], outputs[0])
        let channels = shape[1], plane = LayerChecks.product(shape[2...])
        let block = channels * plane
        guard block > 0 else { return }
        let (before, after) = (before, after)
        let (alphaOverSize, beta, bias) = (Double(alpha) / Double(size), Double(beta), Double(bias))
        forEachChunk(count: shape[0] * channels, chunkSize: max(1, defaultChunkSize / plane),
                     threadCount: CPUThreads.current) { range in
            for p in range {
                let (n, c) = p.quotientAndRemainder(dividingBy: channels)
                let item = input.dataPointer + n * block
                let first = max(c - before, 0), last = min(c + after, channels - 1)
                for i in 0..<plane {
                    var sum = 0.0
                    for k in first...last { let v = Double(item[k * plane + i]); sum += v * v }
                    let x = Double(item[c * plane + i])
                    output.dataPointer[n * block + c * plane + i] = Float(x / Foundation.pow(bias + alphaOverSize * sum, beta))
                }
            }
        }
    }

    public var hasGPUImplementation: Bool { true }

    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try kernel(on: context) }

    private func kernel(on context: GPUContext) throws -> GPUKernel<LRNConstants> {
        try gpuKernel.value(on: context) { try BuiltInShaders.lrn.kernel(on: context) }
    }

    /// `Shaders/lrn.comp`, one invocation per texel.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1, inputs[0].shape == outputs[0].shape else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image and 1 output image of the same shape")
        }
        let output = outputs[0]
        let constants = LRNConstants(shape: output.shapeConstants, before: Int32(before), after: Int32(after),
                                     alphaOverSize: alpha / Float(size), beta: beta, bias: bias)
        try commandBuffer.dispatch(kernel(on: commandBuffer.context), images: [inputs[0], output],
                                   constants: constants, threads: output.threads)
    }
}
