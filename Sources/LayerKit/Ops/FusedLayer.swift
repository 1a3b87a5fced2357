import Foundation

/// Element-wise layers applied one after another as one layer: one GPU
/// dispatch (one read and one write of the image) and one CPU pass over
/// memory, block by block, instead of one per layer. The result equals the
/// layers run one by one within the parity tolerance.
public final class FusedLayer: PerElementLayer, @unchecked Sendable {
    public static let name = "Fused"

    /// The layers, in the order they apply.
    public let layers: [ElementwiseLayer]

    /// Fuses `layers` (at least one), first applied first.
    public init(_ layers: [ElementwiseLayer]) throws {
        guard !layers.isEmpty else { throw LayerKitError.invalidParameter("Fused: no layers to fuse") }
        self.layers = layers
        chain = FormulaChain(stages: layers.flatMap(\.chain.stages))
    }

    /// Core ML style: `parameters["layers"]` holds the `[ElementwiseLayer]`.
    public convenience init(parameters: [String: Any]) throws {
        guard let layers = parameters["layers"] as? [ElementwiseLayer] else {
            throw LayerKitError.invalidParameter("Fused: parameter 'layers' must be an array of ElementwiseLayer")
        }
        try self.init(layers)
    }

    /// `Linear+Swish`.
    public var layerName: String { chain.name }

    /// The layers carry their own weights; a fused layer takes none.
    public func setWeightData(_ weights: [Data]) throws {
        guard weights.isEmpty else {
            throw LayerKitError.invalidWeights("Fused: set weights on the layers before fusing them")
        }
    }

    /// The inputs' shapes; throws when per-channel values do not fit them.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try chain.checkShapes(inputShapes)
        return inputShapes
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        try chain.evaluate(inputs: inputs, outputs: outputs)
    }

    /// `evaluate(inputs:outputs:)` on `threadCount` threads (nil: one per core).
    public func evaluate(inputs: [Tensor], outputs: [Tensor], threadCount: Int?) throws {
        try chain.evaluate(inputs: inputs, outputs: outputs, threadCount: threadCount)
    }

    public var hasGPUImplementation: Bool { true }

    /// Creates the fused chain's one pipeline on `context`, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { try chain.prepare(on: context) }

    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        try chain.encode(commandBuffer: commandBuffer, inputs: inputs, outputs: outputs)
    }

    /// Encodes channels `channels` of `featureChannels` (a piece of a tensor
    /// too large for one image), with those channels' per-channel values.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage],
                       channels: Range<Int>, of featureChannels: Int) throws {
        try chain.channels(channels, of: featureChannels)
            .encode(commandBuffer: commandBuffer, inputs: inputs, outputs: outputs)
    }

    /// The layers' stages as one chain (their weights as they were when fused).
    let chain: FormulaChain
}
