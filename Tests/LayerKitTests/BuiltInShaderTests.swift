import Testing
import VulkanCompute
@testable import LayerKit

/// Each built-in shader's Swift constants struct against the push-constant
/// block of the compiled shader, variant by variant (compiled here with
/// glslang and read from the SPIR-V; no device needed), and the workgroup
/// size against `LK_WORKGROUP_SIZE`.
struct BuiltInShaderTests {
    struct Variant: CustomStringConvertible, Sendable {
        let file: String
        let defines: [(name: String, value: String)]
        let constantsSize: Int
        let images: Int
        var description: String { "\(file) \(defines.map(\.name))" }

        init<C>(_ shader: BuiltInShader<C>, _ defines: [(name: String, value: String)] = []) {
            file = shader.file
            self.defines = defines
            constantsSize = shader.constantsSize
            images = shader.images
        }
    }

    static let variants: [Variant] = [
        Variant(BuiltInShaders.elementwise),
        Variant(BuiltInShaders.elementwise, [("LK_BODY(x)", "(x * param(7) + weight(0))")]),
        Variant(BuiltInShaders.conv2d, [("LK_CONV_DENSE", "1")]),
        Variant(BuiltInShaders.conv2d, [("LK_CONV_DEPTHWISE", "1")]),
        Variant(BuiltInShaders.conv2d, [("LK_CONV_GROUPED", "1")]),
        Variant(BuiltInShaders.conv2d, [("LK_CONV_DENSE", "1"), ("LK_OUT_BLOCK", "4"), ("LK_X_BLOCK", "2")]),
        Variant(BuiltInShaders.conv2d, [("LK_CONV_DENSE", "1"), ("LK_OUT_BLOCK", "2"), ("LK_X_BLOCK", "4"),
                                        ("LK_WEIGHTS_F16", "1")]),
        Variant(BuiltInShaders.conv2d, [("LK_CONV_DEPTHWISE", "1"), ("LK_OUT_BLOCK", "1"), ("LK_X_BLOCK", "4")]),
        Variant(BuiltInShaders.conv2d, [("LK_CONV_DENSE", "1"), ("LK_OUT_BLOCK", "4"), ("LK_X_BLOCK", "8"),
                                        ("LK_SHARED_WEIGHTS", "1")]),
        Variant(BuiltInShaders.conv2d, [("LK_CONV_DENSE", "1"), ("LK_OUT_BLOCK", "2"), ("LK_X_BLOCK", "1"),
                                        ("LK_WEIGHTS_F16", "1"), ("LK_SHARED_WEIGHTS", "1")]),
        Variant(BuiltInShaders.convTranspose2d),
        Variant(BuiltInShaders.pool, [("LK_POOL_KIND", "0")]),
        Variant(BuiltInShaders.pool, [("LK_POOL_KIND", "1")]),
        Variant(BuiltInShaders.pool, [("LK_POOL_KIND", "2")]),
        Variant(BuiltInShaders.binary, [("LK_OP(a, b)", "(a + b)")]),
        Variant(BuiltInShaders.binary, [("LK_OP(a, b)", "lk_imod(a, b)")]),
        Variant(BuiltInShaders.select),
        Variant(BuiltInShaders.concat),
        Variant(BuiltInShaders.reshape),
        Variant(BuiltInShaders.softmax),
        Variant(BuiltInShaders.window),
        Variant(BuiltInShaders.softmax, [("LK_SOFTMAX_KIND", "1")]),
        Variant(BuiltInShaders.softmax, [("LK_SOFTMAX_KIND", "2")]),
        Variant(BuiltInShaders.softmax, [("LK_SOFTMAX_KIND", "0"), ("LK_SOFTMAX_ALONG", "1")]),
        Variant(BuiltInShaders.softmax, [("LK_SOFTMAX_KIND", "1"), ("LK_SOFTMAX_ALONG", "2")]),
        Variant(BuiltInShaders.softmax, [("LK_SOFTMAX_KIND", "2"), ("LK_SOFTMAX_ALONG", "1")]),
        Variant(BuiltInShaders.reduce, [("LK_REDUCE_OP", "9"), ("LK_REDUCE_SPATIAL", "1")]),
        Variant(BuiltInShaders.reduce, [("LK_REDUCE_OP", "1"), ("LK_REDUCE_SPATIAL", "0")]),
        Variant(BuiltInShaders.instanceNormalization),
        Variant(BuiltInShaders.lrn),
        Variant(BuiltInShaders.transpose),
        Variant(BuiltInShaders.channelShuffle),
        Variant(BuiltInShaders.pad),
        Variant(BuiltInShaders.resize),
        Variant(BuiltInShaders.optimizer),
        Variant(BuiltInShaders.weightGather),
        Variant(BuiltInShaders.matmul),
        Variant(BuiltInShaders.batchedGemm),
        Variant(BuiltInShaders.attention),
        Variant(BuiltInShaders.attentionPresent),
    ]

    @Test(arguments: variants)
    func theConstantsStructIsThePushConstantBlock(_ variant: Variant) throws {
        let source = try GPUContext.builtInSource(variant.file)
        let spirv = try ShaderCompiler.shared.compile(source: source, name: variant.file,
                                                      includes: GPUContext.includes, defines: variant.defines)
        let reflection = try SPIRVReflection(spirv: spirv)
        #expect(reflection.pushConstantSize == variant.constantsSize)
        #expect([reflection.workgroupSize.0, reflection.workgroupSize.1, reflection.workgroupSize.2] == [8, 8, 1])
    }

    /// Every shader of the binary has a descriptor above (a new shader
    /// without one fails here).
    @Test func everyEmbeddedShaderIsDeclared() {
        let declared = Set(Self.variants.map(\.file))
        let embedded = Set(EmbeddedShaders.sources.map(\.key).filter { $0.hasSuffix(".comp") })
        #expect(declared == embedded)
    }

    /// The sizes as the GLSL declares them, counted by hand (std430: 4-byte
    /// scalars, uvec4 aligned to 16): a check of the structs that does not
    /// go through the reflection.
    @Test func theStructSizesAreTheBlocksCountedByHand() {
        #expect(MemoryLayout<ShapeConstants>.size == 5 * 4)
        #expect(MemoryLayout<PerElementConstants>.size == 5 * 4 + 8 * 4 + 4)
        #expect(MemoryLayout<ConvolutionConstants>.size == 5 * 4 + 14 * 4)
        #expect(MemoryLayout<PoolConstants>.size == 5 * 4 + 12 * 4)
        #expect(MemoryLayout<BinaryConstants>.size == 5 * 4 + 8 * 4)
        #expect(MemoryLayout<ConcatConstants>.size == 32 + 2 * 16)
        #expect(MemoryLayout<ReshapeConstants>.size == 5 * 4 + 3 * 4)
        #expect(MemoryLayout<WindowConstants>.size == 32 + 3 * 16)
        #expect(MemoryLayout<ReduceConstants>.size == 5 * 4 + 4 * 4)
        #expect(MemoryLayout<InstanceNormalizationConstants>.size == 5 * 4 + 3 * 4)
        #expect(MemoryLayout<MatMulConstants>.size == 5 * 4 + 4)
        #expect(MemoryLayout<BatchedGemmConstants>.size == 5 * 4 + 3 * 4)
        #expect(MemoryLayout<LRNConstants>.size == 5 * 4 + 5 * 4)
        #expect(MemoryLayout<TransposeConstants>.size == 32 + 16)
        #expect(MemoryLayout<ChannelShuffleConstants>.size == 5 * 4 + 4)
        #expect(MemoryLayout<PadConstants>.size == 5 * 4 + 17 * 4)
        #expect(MemoryLayout<ResizeConstants>.size == 5 * 4 + 5 * 4)
        #expect(MemoryLayout<WeightGatherConstants>.size == 3 * 4)
        #expect(MemoryLayout<OptimizerConstants>.size == 5 * 4 + 11 * 4)
        #expect(MemoryLayout<AttentionConstants>.size == 5 * 4 + 17 * 4)
        #expect(MemoryLayout<AttentionPresentConstants>.size == 5 * 4 + 3 * 4)
    }
}
