/// The push constants every slice-image shader starts with: the image
/// geometry that `LK_SHAPE_FIELDS` declares in `Shaders/layerkit.glsl`
/// (`uint width; uint height; uint channels; uint slices; uint layers`).
/// A custom kernel's constants struct puts it first.
public struct ShapeConstants: BitwiseCopyable, Sendable, Equatable {
    /// W.
    public var width: UInt32
    /// H.
    public var height: UInt32
    /// C: feature channels.
    public var channels: UInt32
    /// `(C + 3) / 4`: array layers per batch item.
    public var slices: UInt32
    /// `N × slices`: the array layers of the tensor.
    public var layers: UInt32
}

extension ShapeConstants {
    /// The geometry of `image`.
    public init(_ image: SliceImage) {
        width = UInt32(image.width)
        height = UInt32(image.height)
        channels = UInt32(image.featureChannels)
        slices = UInt32(image.slices)
        layers = UInt32(image.layers)
    }
}
