import Foundation

/// Swish, `x / (1 + exp(-beta * x))`, the activation of the Core ML
/// custom-layer article, on the CPU (SIMD, threads) and the GPU.
///
/// `beta` is a parameter (default 1). Per-channel betas may instead come as
/// weights: one Float32 little-endian value per channel (6 channels = 24
/// bytes), through `setWeightData`; they then replace `beta`.
public final class Swish: CustomLayer {
    public static let name = "Swish"
    /// One optional weight blob: per-channel `beta`.
    public static let weightNames = ["beta"]

    /// The scalar beta (used when no per-channel weights are set).
    public let beta: Float
    /// Per-channel betas from `setWeightData`, if any.
    public private(set) var channelBeta: [Float]?

    static let scalarKernel = PerElementKernel(name: "Swish", body: "x / (1.0 + exp(-param(0) * x))")
    static let channelKernel = PerElementKernel(name: "Swish", body: "x / (1.0 + exp(-weight(0) * x))")

    /// Reads `beta` (default 1); any other parameter is an error.
    public convenience init(parameters: [String: Any]) throws {
        try parameters.requireOnly(["beta"], layer: Swish.name)
        self.init(beta: try parameters.float("beta", default: 1, layer: Swish.name))
    }

    /// A Swish with scalar `beta`.
    public init(beta: Float = 1) {
        self.beta = beta
    }

    /// Sets per-channel betas: one blob of C Float32 values. The count is
    /// checked against the input's channels when the layer runs.
    public func setWeightData(_ weights: [Data]) throws {
        guard weights.count == 1 else {
            throw LayerKitError.invalidWeights("Swish takes one weight blob (per-channel beta), got \(weights.count)")
        }
        channelBeta = try weights[0].float32Values(what: "Swish beta weights")
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        inputShapes
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let evaluator = CPUEvaluator()
        for (input, output) in zip(inputs, outputs) {
            if let channelBeta {
                try evaluator.swish(input, into: output, channelBeta: channelBeta)
            } else {
                try evaluator.swish(input, into: output, beta: beta)
            }
        }
    }

    public var hasGPUImplementation: Bool { true }

    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        for (input, output) in zip(inputs, outputs) {
            if let channelBeta {
                try commandBuffer.dispatch(Swish.channelKernel, input: input, output: output, weights: [channelBeta])
            } else {
                try commandBuffer.dispatch(Swish.scalarKernel, input: input, output: output, parameters: [beta])
            }
        }
    }
}
