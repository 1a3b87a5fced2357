import Foundation

/// Swish, `x * sigmoid(beta * x)` = `x / (1 + exp(-beta * x))`, the
/// activation of the Core ML custom-layer article: the catalog's `Swish`
/// op under its own type, for `Swish(beta: 0.5)`.
///
/// `beta` is a parameter (default 1). Per-channel betas may instead come as
/// weights: one Float32 little-endian value per channel (6 channels = 24
/// bytes), through `setWeightData`; they then replace `beta`. On the CPU it
/// runs as one fused SIMD kernel.
public final class Swish: ElementwiseLayer, @unchecked Sendable {
    override public class var name: String { "Swish" }

    static let definition = OpDefinition.catalog.first { $0.name == "Swish" }

    /// Reads `beta` (default 1); any other parameter is an error.
    public required convenience init(parameters: [String: Any]) throws {
        guard let definition = Swish.definition else {
            throw LayerKitError.unknownOp("the catalog has no Swish")
        }
        try self.init(definition: definition, parameters: parameters)
    }

    /// A Swish with scalar `beta`, which must be finite.
    public convenience init(beta: Float = 1) throws {
        try self.init(parameters: ["beta": beta])
    }

    /// The scalar beta (used when no per-channel weights are set).
    public var beta: Float { scalars["beta"] ?? 1 }
    /// Per-channel betas from `setWeightData`, if any.
    public var channelBeta: [Float]? { channelValues["beta"] }

    /// Sets per-channel betas: exactly one blob of C Float32 values.
    override public func setWeightData(_ weights: [Data]) throws {
        guard weights.count == 1, !weights[0].isEmpty else {
            throw LayerKitError.invalidWeights("Swish takes one weight blob (per-channel beta), got \(weights.count)")
        }
        try super.setWeightData(weights)
    }
}
