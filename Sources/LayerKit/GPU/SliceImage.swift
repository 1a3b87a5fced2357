internal import VulkanCompute

/// A batch of feature maps on the GPU in half precision: the `MPSImage` of
/// LayerKit.
///
/// Storage is one rgba16f 2D-array image. Four consecutive channels share a
/// slice; channel `c` of batch item `n` is lane `c % 4` of array layer
/// `n * slices + c / 4`, with `slices = (featureChannels + 3) / 4`. Lanes past
/// `featureChannels` in the last slice are zero.
public final class SliceImage: @unchecked Sendable {
    /// C: the number of feature channels.
    public let featureChannels: Int
    /// W.
    public let width: Int
    /// H.
    public let height: Int
    /// N: the number of images in the batch.
    public let batch: Int
    /// The underlying Vulkan image (batch × slices array layers).
    let texture: Image
    /// Where the texture goes when this image dies, to serve the next slice
    /// image of its extent (nil: it is destroyed).
    private let pool: ImagePool?

    /// `(featureChannels + 3) / 4`: array layers per batch item.
    public var slices: Int { (featureChannels + 3) / 4 }
    /// `batch × slices`: the array layers the tensor occupies.
    public var layers: Int { batch * slices }
    /// `[batch, featureChannels, height, width]`.
    public var shape: [Int] { [batch, featureChannels, height, width] }
    /// The number of tensor elements it holds (padding lanes excluded).
    public var count: Int { batch * featureChannels * height * width }

    /// Makes an uninitialized image for an NCHW shape; throws for empty
    /// shapes or shapes past the device's image limits (the error names the
    /// limit). `GPUContext.makeSliceImage` is the public way to make one.
    /// With a `pool`, the texture is taken from it when it holds one of
    /// this extent and given back to it at `deinit`; `created` is called
    /// when a new texture had to be made.
    init(device: Device, batch: Int, featureChannels: Int, height: Int, width: Int, pool: ImagePool? = nil,
         created: () -> Void = {}) throws {
        guard batch > 0, featureChannels > 0, height > 0, width > 0 else {
            throw LayerKitError.shapeMismatch(
                "slice image shape \(Tensor.describe([batch, featureChannels, height, width])) must be positive")
        }
        self.featureChannels = featureChannels
        self.width = width
        self.height = height
        self.batch = batch
        let (layers, overflow) = batch.multipliedReportingOverflow(by: (featureChannels + 3) / 4)
        guard !overflow else { throw LayerKitError.shapeMismatch("batch x slices overflows") }
        self.pool = pool
        if let reused = pool?.take(width: width, height: height, layers: layers) {
            texture = reused
        } else {
            texture = try Image(device: device, width: width, height: height, layers: layers)
            created()
        }
    }

    deinit { pool?.giveBack(texture) }

    /// The push constants every slice-image shader starts with
    /// (`LK_SHAPE_FIELDS` in `Shaders/layerkit.glsl`).
    public var shapeConstants: ShapeConstants { ShapeConstants(self) }

    /// Texels of the logical extent: width × height × batch·slices.
    var texelCount: Int { width * height * layers }
    /// Bytes of the image's texels tightly packed (8 a texel).
    var texelBytes: Int { texelCount * Image.bytesPerTexel }

    /// One invocation per texel of the logical extent.
    public var threads: (x: Int, y: Int, z: Int) { (width, height, layers) }
}
