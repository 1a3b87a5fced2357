import Foundation

/// ShuffleNet's channel shuffle: the channels (axis 1) read as `groups`
/// groups of C / groups are interleaved, so output channel `c` is input
/// channel `(c % groups) * (C / groups) + c / groups`. It is what ONNX
/// writes as Reshape [N, C, ...] -> [N, g, C/g, ...], Transpose
/// [0, 2, 1, ...], Reshape back; `ModelGraph.fuseChannelShuffles` makes one
/// of these of the three, so the rank-5 values in between never need an image.
public final class ChannelShuffle: ElementMovingLayer, Sendable {
    /// The number of groups; it divides the channel count.
    public let groups: Int
    /// The pipeline `prepare` made on each context.
    private let gpuKernel = PerContext<GPUKernel<ChannelShuffleConstants>>()

    /// A shuffle of `groups` groups (at least 1).
    public init(groups: Int) throws {
        guard groups >= 1 else { throw LayerKitError.invalidParameter("ChannelShuffle: groups \(groups) must be >= 1") }
        self.groups = groups
    }

    public var layerName: String { "ChannelShuffle" }

    /// The input's shape; throws unless it has a channel axis the groups divide.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        guard shape.count >= 2, shape[1] % groups == 0 else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): \(groups) groups do not divide the channels of \(Tensor.describe(shape))")
        }
        return [shape]
    }

    /// Copies each channel's plane (the extents after axis 1) from its source channel.
    func moveElements<Element>(inputs: [UnsafeBufferPointer<Element>], inputShapes: [[Int]],
                               outputs: [UnsafeMutableBufferPointer<Element>]) throws {
        let shape = try outputShapes(forInputShapes: inputShapes)[0]
        let count = LayerChecks.product(shape[...])
        guard inputs.count == 1, outputs.count == 1, inputs[0].count == count, outputs[0].count == count else {
            throw LayerKitError.shapeMismatch("\(layerName): buffers do not match \(Tensor.describe(shape))")
        }
        guard let source = inputs[0].baseAddress, let destination = outputs[0].baseAddress else { return }
        let channels = shape[1], perGroup = shape[1] / groups
        let plane = LayerChecks.product(shape[2...])
        for n in 0..<shape[0] {
            for c in 0..<channels {
                let from = (c % groups) * perGroup + c / groups
                (destination + (n * channels + c) * plane).update(from: source + (n * channels + from) * plane,
                                                                  count: plane)
            }
        }
    }

    public var hasGPUImplementation: Bool { true }

    /// Creates the pipeline on `context`, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try kernel(on: context) }

    private func kernel(on context: GPUContext) throws -> GPUKernel<ChannelShuffleConstants> {
        try gpuKernel.value(on: context) { try BuiltInShaders.channelShuffle.kernel(on: context) }
    }

    /// `Shaders/channel_shuffle.comp`: each output lane loads its source channel's lane.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1, inputs[0].shape == outputs[0].shape,
              inputs[0].featureChannels % groups == 0 else {
            throw LayerKitError.shapeMismatch(
                "\(layerName) takes 1 input image and 1 output image of one shape, its channels divisible by \(groups)")
        }
        let constants = ChannelShuffleConstants(shape: outputs[0].shapeConstants, groups: UInt32(groups))
        try commandBuffer.dispatch(kernel(on: commandBuffer.context), images: [inputs[0], outputs[0]],
                                   constants: constants, threads: outputs[0].threads)
    }
}
