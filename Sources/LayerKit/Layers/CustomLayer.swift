import Foundation

/// A user-defined layer: Core ML's `MLCustomLayer`, with `Tensor` for
/// `MLMultiArray` and `SliceImage` for `MTLTexture`. It is found by name
/// (`--op`, or a model node's op type), made from a parameter dictionary and
/// given its weights as blobs, the way Core ML makes the class named in a
/// model's `className`.
///
/// `evaluate` (CPU) is required; `encode` (GPU) is optional.
public protocol CustomLayer: Layer {
    /// The name the layer is registered under (`--op` on the command line).
    static var name: String { get }

    /// The names of the weight blobs `setWeightData` takes, in order
    /// (`--weights NAME=file.npy`). Defaults to none.
    static var weightNames: [String] { get }

    /// Makes the layer from its parameters (numbers as `Double`, `Float`,
    /// `Int` or `NSNumber`; `LayerParameters` reads them); unknown or
    /// ill-typed parameters throw.
    init(parameters: [String: Any]) throws

    /// Receives the layer's weights, each blob Float32 little-endian
    /// (`WeightBlob.float32Values` reads one).
    func setWeightData(_ weights: [Data]) throws
}

extension CustomLayer {
    public static var weightNames: [String] { [] }

    /// Defaults to `Self.name` (a layer type serving several ops names the op).
    public var layerName: String { Self.name }
}
