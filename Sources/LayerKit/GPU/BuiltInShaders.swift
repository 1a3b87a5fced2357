/// One of LayerKit's own shaders (`Shaders/<file>`), declared once: its
/// binding layout (`images` rgba16f storage images, then `buffers` storage
/// buffers) and its push-constant block as the Swift struct `Constants`.
/// The workgroup size is the shader's (`LK_WORKGROUP_SIZE` in
/// `Shaders/layerkit.glsl`), read from its SPIR-V.
struct BuiltInShader<Constants: BitwiseCopyable>: Sendable {
    let file: String
    let images: Int
    let buffers: Int

    /// The kernel of this shader with `defines` (a variant) on `context`,
    /// compiled once per context and variant.
    func kernel(on context: GPUContext, name: String? = nil,
                defines: [(name: String, value: String)] = []) throws -> GPUKernel<Constants> {
        try context.kernel(name: name ?? variantName(defines), shader: file,
                           source: { try GPUContext.builtInSource(file) },
                           images: images, buffers: buffers, defines: defines)
    }

    /// The kernel with `epilogue` fused (Shaders/epilogue.glsl): its
    /// bindings follow the shader's own images and buffers.
    func kernel(on context: GPUContext, name: String, defines: [(name: String, value: String)],
                epilogue: Epilogue) throws -> GPUKernel<Constants> {
        try context.kernel(name: name, shader: file, source: { try GPUContext.builtInSource(file) },
                           images: images, buffers: buffers, trailing: epilogue.trailingBindings,
                           defines: defines + epilogue.defines(firstBinding: images + buffers))
    }

    /// `file [NAME=value ...]`: how profiles and errors name a variant.
    func variantName(_ defines: [(name: String, value: String)]) -> String {
        defines.isEmpty ? file : "\(file) [\(defines.map { "\($0.name)=\($0.value)" }.joined(separator: " "))]"
    }

    /// `MemoryLayout<Constants>.size`: the bytes pushed per dispatch.
    var constantsSize: Int { MemoryLayout<Constants>.size }
}

/// Every built-in shader.
enum BuiltInShaders {
    static let elementwise = BuiltInShader<PerElementConstants>(file: "elementwise.comp", images: 2, buffers: 1)
    static let conv2d = BuiltInShader<ConvolutionConstants>(file: "conv2d.comp", images: 2, buffers: 2)
    static let convTranspose2d = BuiltInShader<ConvolutionConstants>(file: "conv_transpose2d.comp", images: 2, buffers: 2)
    static let pool = BuiltInShader<PoolConstants>(file: "pool.comp", images: 2, buffers: 0)
    static let binary = BuiltInShader<BinaryConstants>(file: "binary.comp", images: 3, buffers: 0)
    static let select = BuiltInShader<WhereConstants>(file: "where.comp", images: 4, buffers: 0)
    static let concat = BuiltInShader<ConcatConstants>(file: "concat.comp", images: ConcatLayer.inputsPerDispatch + 1,
                                                       buffers: 0)
    static let reshape = BuiltInShader<ReshapeConstants>(file: "reshape.comp", images: 2, buffers: 0)
    static let softmax = BuiltInShader<ShapeConstants>(file: "softmax.comp", images: 2, buffers: 0)
    static let window = BuiltInShader<WindowConstants>(file: "window.comp", images: 2, buffers: 0)
    static let reduce = BuiltInShader<ReduceConstants>(file: "reduce.comp", images: 2, buffers: 0)
    static let instanceNormalization = BuiltInShader<InstanceNormalizationConstants>(file: "instancenorm.comp",
                                                                                     images: 2, buffers: 1)
    static let lrn = BuiltInShader<LRNConstants>(file: "lrn.comp", images: 2, buffers: 0)
    static let transpose = BuiltInShader<TransposeConstants>(file: "transpose.comp", images: 2, buffers: 0)
    static let channelShuffle = BuiltInShader<ChannelShuffleConstants>(file: "channel_shuffle.comp", images: 2,
                                                                       buffers: 0)
    static let pad = BuiltInShader<PadConstants>(file: "pad.comp", images: 2, buffers: 0)
    static let resize = BuiltInShader<ResizeConstants>(file: "resize.comp", images: 2, buffers: 1)
    static let optimizer = BuiltInShader<OptimizerConstants>(file: "optimizer.comp", images: 0, buffers: 4)
    static let weightGather = BuiltInShader<WeightGatherConstants>(file: "weight_gather.comp", images: 0, buffers: 3)
    static let matmul = BuiltInShader<MatMulConstants>(file: "matmul.comp", images: 3, buffers: 0)
    static let batchedGemm = BuiltInShader<BatchedGemmConstants>(file: "batched_gemm.comp", images: 2, buffers: 1)
    static let attention = BuiltInShader<AttentionConstants>(file: "attention.comp", images: 4, buffers: 4)
    static let attentionPresent = BuiltInShader<AttentionPresentConstants>(file: "attention_present.comp", images: 2,
                                                                          buffers: 1)
}

/// `elementwise.comp`: `LK_SHAPE_FIELDS; float params[8]; float zero`.
struct PerElementConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var parameters: (Float, Float, Float, Float, Float, Float, Float, Float)
    /// Always 0: the template's `lk_zero`, a zero the shader compiler cannot
    /// prove (see `Expr.glslLiteral`).
    var zero: Float = 0

    /// All fields zero.
    static let zero = PerElementConstants(
        shape: ShapeConstants(width: 0, height: 0, channels: 0, slices: 0, layers: 0),
        parameters: (0, 0, 0, 0, 0, 0, 0, 0))

    /// The template's weight buffer for per-channel `weights` (each set one
    /// value per channel of `channels`): one run of `slices * 4` floats per
    /// set, zero past the last channel, so `weight(k)` reads a vec4 a slice.
    static func weightLayout(_ weights: [[Float]], channels: Int) -> [Float] {
        let padded = (channels + 3) / 4 * 4
        var layout = [Float](repeating: 0, count: max(1, weights.count * padded))
        for (k, set) in weights.enumerated() {
            for (c, value) in set.prefix(channels).enumerated() { layout[k * padded + c] = value }
        }
        return layout
    }
}

/// `conv2d.comp` and `conv_transpose2d.comp`: the output's shape, then the
/// input's and the window's geometry.
struct ConvolutionConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var inputWidth, inputHeight, inputChannels, inputSlices: UInt32
    var kernelWidth, kernelHeight: UInt32
    var strideX, strideY, dilationX, dilationY: UInt32
    var padLeft, padTop: Int32
    var groupInputChannels, groupOutputChannels: UInt32
}

/// `pool.comp`: the output's shape, then the input's extent and the window.
struct PoolConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var inputWidth, inputHeight: Int32
    var kernelWidth, kernelHeight: Int32
    var strideX, strideY: Int32
    var dilationX, dilationY: Int32
    var padLeft, padTop, padRight, padBottom: Int32
}

/// `binary.comp`: the output's shape, then each operand's W, H, C, N.
struct BinaryConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var lhs: Operand
    var rhs: Operand

    /// One operand's extents (four uints, not a uvec4: 4-byte aligned).
    struct Operand: BitwiseCopyable {
        var width, height, channels, batch: UInt32
    }
}

/// `where.comp`: the output's shape, then the condition's, X's and Y's W, H, C, N.
struct WhereConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var condition: BinaryConstants.Operand
    var x: BinaryConstants.Operand
    var y: BinaryConstants.Operand
}

/// `concat.comp`: the output's shape, the slices this dispatch writes, its
/// flags, and the channel offset and count of each input (uvec4s; unused 0).
struct ConcatConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var firstSlice, sliceCount, flags: UInt32
    var offsets: SIMD4<UInt32>
    var counts: SIMD4<UInt32>
}

/// `reshape.comp`: the output's shape, then the input's W, H, C.
struct ReshapeConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var inputWidth, inputHeight, inputChannels: UInt32
}

/// `window.comp`: the output's shape, the input image's W, H, C, then the
/// window's start, step and input extent per axis (N, C, H, W).
struct WindowConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var inputWidth, inputHeight, inputChannels: UInt32
    var start, step, extent: SIMD4<Int32>
}

/// `reduce.comp`: the output's shape, then the input's W, H, C and slices.
struct ReduceConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var inputWidth, inputHeight, inputChannels, inputSlices: UInt32
}

/// `instancenorm.comp`: the shape, epsilon, whether scale and bias are
/// per channel (0, InstanceNormalization) or per texel of the plane (1,
/// LayerNormalization), and whether each row of the plane is normalized
/// alone (1, LayerNormalization over W only).
struct InstanceNormalizationConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var epsilon: Float
    var perPosition: UInt32 = 0
    var perRow: UInt32 = 0
}

/// `matmul.comp`: the output's shape, then K.
struct MatMulConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var inner: UInt32
}

/// `batched_gemm.comp`: the output's shape, K, N, and 1 when A is rank 3
/// (its rows' K along H) rather than rank 4 (K along W).
struct BatchedGemmConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var inner: UInt32
    var columns: UInt32
    var alongHeight: UInt32
}

/// `lrn.comp`: the shape, the window's channels below and above, alpha / size, beta, bias.
struct LRNConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var before, after: Int32
    var alphaOverSize, beta, bias: Float
}

/// `transpose.comp`: the output's shape, the input's W, H, C, and the
/// permutation extended to 4 axes (output axis k is input axis perm[k]).
struct TransposeConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var inputWidth, inputHeight, inputChannels: UInt32
    var perm: SIMD4<UInt32>
}

/// `channel_shuffle.comp`: the shape (input and output alike), then the groups.
struct ChannelShuffleConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var groups: UInt32
}

/// `pad.comp`: the output's shape, the input's W and H, the kept region of
/// the input (its first column and row, its width and height: negative pads
/// crop), where it starts in the output, the mode (0 constant, 1 reflect,
/// 2 edge, 3 wrap) and the constant.
struct PadConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var inputWidth, inputHeight: Int32
    var keptX, keptY, keptWidth, keptHeight: Int32
    var startX, startY: Int32
    var mode: UInt32
    var value: Float
    /// The channel and batch axes' kept region and start, as W's and H's;
    /// `inputSlices`: the input's array layers per batch item.
    var keptC, keptChannels, startC: Int32
    var inputSlices: UInt32
    var keptN, keptBatch, startN: Int32
}

/// `resize.comp`: the output's shape, the input's W and H, how many taps
/// each axis's table entries use, whether an out-of-range entry gives
/// `extrapolation`, and where the H table starts in the buffer (in entries;
/// the W table starts at 0). An entry is two vec4s: 4 input indices, 4 weights.
struct ResizeConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var inputWidth, inputHeight: UInt32
    var taps: UInt32
    var heightTable: UInt32
    var extrapolation: Float
}
