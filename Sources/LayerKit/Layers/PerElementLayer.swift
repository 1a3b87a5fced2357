/// A layer whose GPU work maps each element on its own: an output element
/// depends only on the input element at the same place and on values of its
/// channel. The backend may then run a tensor too large for one slice image
/// (past `maxImageDimension2D` or `maxImageArrayLayers`) in pieces that each
/// fit, transparently; other layers get an error naming the limit.
///
/// The catalog's ops (`ElementwiseLayer`, `FormulaLayer`, `Swish`) and
/// `FusedLayer` conform. A conforming layer's outputs have its inputs' shapes.
public protocol PerElementLayer: CustomLayer {
    /// Encodes the work for one piece: the images hold channels `channels`
    /// (a range starting at a multiple of 4) of tensors with
    /// `featureChannels` channels, so image channel `c` is channel
    /// `channels.lowerBound + c` and per-channel values must be taken from
    /// there. `encode(commandBuffer:inputs:outputs:)` is this with all channels.
    func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage],
                channels: Range<Int>, of featureChannels: Int) throws
}
