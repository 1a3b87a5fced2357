/// `conv2d.comp`'s three forms, by how input channels meet output channels.
enum ConvolutionVariant: String {
    /// group 1: every output slice reads every input slice, a mat4 a tap.
    case dense
    /// group = C = M: output slice s reads input slice s, a vec4 a tap.
    case depthwise
    /// Any other grouping: each output lane reads its group's channels.
    case grouped

    init(group: Int, inputChannels: Int, outputChannels: Int) {
        if group == 1 {
            self = .dense
        } else if group == inputChannels && group == outputChannels {
            self = .depthwise
        } else {
            self = .grouped
        }
    }

    /// The shader's define for this form.
    var define: String { "LK_CONV_\(rawValue.uppercased())" }
}

/// What one invocation of `conv2d.comp` computes: `outputSlices` output
/// slices (dense only) by `texels` texels along a row (dense and depthwise).
struct ConvolutionBlock: Hashable, Sendable, CustomStringConvertible {
    var outputSlices: Int
    var texels: Int
    /// Dense only: a workgroup shares its weights through `shared` storage
    /// (`LK_SHARED_WEIGHTS`), a chunk of `sharedDepth` steps at a time.
    var sharedWeights = false

    static let single = ConvolutionBlock(outputSlices: 1, texels: 1)
    /// The blocks the shader is built for (its defines take these values).
    static let outputSliceChoices = [1, 2, 4, 8]
    static let texelChoices = [1, 2, 4, 8]

    var description: String { "\(outputSlices)x\(texels)" + (sharedWeights ? " shared" : "") }

    /// The (tap, input slice) steps one shared chunk holds (`LK_SHARED_K`):
    /// 8 KiB at 4 output slices, and even 8 slices' 16 KiB fit Vulkan's least
    /// `maxComputeSharedMemorySize`. On lavapipe (forced on) 32 steps beat 16
    /// by 1.3x at 512->512 7x7 (fewer barriers; 31.7 against 42.6 ms) and 64
    /// gained nothing more (37.1); tied at 64->64 56x56 (19.0 ms each).
    static let sharedDepth = 32
    /// The bytes of `shared` storage the shared-weight form declares: a mat4 per step and output slice.
    var sharedTileBytes: Int { Self.sharedDepth * outputSlices * 64 }

    /// The block for a convolution of `variant` writing `outputSlices`
    /// slices of `width` x `height` texels (batch `batch`) on a device that
    /// is (`onCPU`) or is not a CPU emulating a GPU.
    ///
    /// Why (lavapipe, 2 threads, min of alternating runs under load 5-12):
    /// a weight load there is a scalar load per lane, so texels per weight
    /// load is what pays: 4 output slices x 4 texels beat 4x1 by 1.2-2.3x on
    /// 7x7x512, 14x14x256 and 14x14 1x1 convs, and 4x8 beat 4x4 by 1.1-1.5x
    /// from 7x7x512 to 56x56x64 (with the flat block count; a 7-wide row is
    /// one block of 8); 8 output slices lost (37% slower at 8x4, spills). On
    /// a real GPU (not measured here) small maps block over channels only:
    /// spatial blocks there leave too few invocations to fill the device.
    ///
    /// Shared weights (`sharedMemory`: the device's bytes a workgroup may
    /// declare) only off a CPU device, where at least half a workgroup's 64
    /// invocations have blocks to compute, and only where the tile fits. Not
    /// on lavapipe: forced on (32 steps a chunk), medians of 3 alternating
    /// runs at load 3.5-4.5, 3x3 64->64 56x56 (4x8) went 11.1 -> 19.0 ms and
    /// 3x3 512->512 7x7 (4x8: 7 live invocations a workgroup) 11.3 -> 31.7
    /// ms; at 16 steps and load 4.5-5, 4x1 on 7x7 (49 live) 76.0 -> 170.0 ms.
    /// Its "shared" storage is the same cached memory as the buffer, and each
    /// barrier() switches every invocation of the workgroup. On real GPUs
    /// (not measured here) it is the usual tiling.
    static func chosen(for variant: ConvolutionVariant, outputSlices: Int, width: Int, height: Int,
                       batch: Int, onCPU: Bool = true, sharedMemory: Int = 0) -> ConvolutionBlock {
        let rowTexels = width >= 7 ? 8 : width >= 3 ? 4 : width
        switch variant {
        case .grouped:
            return .single
        case .depthwise:
            return ConvolutionBlock(outputSlices: 1, texels: min(4, rowTexels))
        case .dense:
            let slices = outputSlices >= 4 ? 4 : outputSlices >= 2 ? 2 : 1
            let texels = onCPU ? rowTexels : width * height >= 28 * 28 ? (width >= 32 ? 4 : 2) : 1
            var block = ConvolutionBlock(outputSlices: slices, texels: texels)
            let spatialBlocks = (width + texels - 1) / texels * height
            block.sharedWeights = !onCPU && spatialBlocks >= 32 && block.sharedTileBytes <= sharedMemory
            return block
        }
    }
}

/// How a convolution's GPU form is chosen; each field nil picks by the
/// shape and the device. An internal switch: tests force every path.
struct ConvolutionGPUOptions: Sendable {
    /// The block each invocation computes (output slices apply to dense
    /// convolutions, texels to dense and depthwise ones).
    var block: ConvolutionBlock?
    /// Dense weights stored as fp16 (`LK_WEIGHTS_F16`); sums stay fp32.
    var float16Weights: Bool?
    /// Dense weights shared per workgroup (`LK_SHARED_WEIGHTS`); off where the tile does not fit.
    var sharedWeights: Bool?
    /// The fields `LAYERKIT_GPU_CONV` forces (`block=SxT`, `f16weights=0|1`, `shared=0|1`,
    /// comma-separated; others ignored), for benchmarks.
    static let environment: ConvolutionGPUOptions = {
        var options = ConvolutionGPUOptions()
        for item in (GPUEnvironment.convolutionOverride ?? "").split(separator: ",") {
            let pair = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            switch pair[0] {
            case "block":
                let sizes = pair[1].split(separator: "x").compactMap { Int($0) }
                if sizes.count == 2, ConvolutionBlock.outputSliceChoices.contains(sizes[0]),
                   ConvolutionBlock.texelChoices.contains(sizes[1]) {
                    options.block = ConvolutionBlock(outputSlices: sizes[0], texels: sizes[1])
                }
            case "f16weights": options.float16Weights = pair[1] == "1"
            case "shared": options.sharedWeights = pair[1] == "1"
            default: break
            }
        }
        return options
    }()
}

/// What a convolution keeps on one context: its pipeline, the block it was
/// built for, and its weights and bias in device buffers.
struct PreparedConvolution {
    let kernel: GPUKernel<ConvolutionConstants>
    let weights: GPUBuffer
    let bias: GPUBuffer
    /// One texel and slice for a `conv_transpose2d.comp` kernel.
    var block = ConvolutionBlock.single
    /// The kernel's defines (form, block), which a fused epilogue's kernel
    /// repeats: the weights are arranged for them.
    var defines: [(name: String, value: String)] = []
}

extension Convolution {
    var variant: ConvolutionVariant {
        ConvolutionVariant(group: group, inputChannels: inputChannels, outputChannels: outputChannels)
    }

    /// The weights as `conv2d.comp` reads them for `block`, and the bias as
    /// one vec4 per output slice, padded to whole blocks (zeros past M, or
    /// everywhere without a bias).
    ///
    /// dense: a mat4 per (block of output slices, tap, input slice, slice in
    /// the block), tap = ky*kW + kx, whose column i, row o is
    /// w[4*os + o][4*is + i] (zero past M or C), so that `matrix * texel` is
    /// the four outputs' sums over four inputs and one invocation reads its
    /// block's matrices one after another. depthwise: a vec4 per (slice,
    /// tap). grouped: the ONNX layout as is.
    static func arrangedForDevice(weights: Tensor, bias: Tensor?, group: Int,
                                  block: ConvolutionBlock = .single) -> (weights: [Float], bias: [Float]) {
        let (m, cg, taps) = (weights.shape[0], weights.shape[1], weights.shape[2] * weights.shape[3])
        let c = cg * group
        let (inSlices, ob) = ((c + 3) / 4, block.outputSlices)
        let variant = ConvolutionVariant(group: group, inputChannels: c, outputChannels: m)
        let blocks = ((m + 3) / 4 + (variant == .dense ? ob : 1) - 1) / (variant == .dense ? ob : 1)
        let outSlices = blocks * (variant == .dense ? ob : 1)
        var biasValues = [Float](repeating: 0, count: outSlices * 4)
        if let bias { biasValues.replaceSubrange(0..<m, with: bias.elements) }
        let w = weights.elements
        var values: [Float]
        switch variant {
        case .dense:
            values = [Float](repeating: 0, count: outSlices * taps * inSlices * 16)
            for o in 0..<m {
                let (os, lane) = (o / 4, o % 4)
                for i in 0..<c {
                    for t in 0..<taps {
                        let matrix = ((os / ob * taps + t) * inSlices + i / 4) * ob + os % ob
                        values[matrix * 16 + i % 4 * 4 + lane] = w[(o * c + i) * taps + t]
                    }
                }
            }
        case .depthwise:
            values = [Float](repeating: 0, count: outSlices * taps * 4)
            for channel in 0..<m {
                for t in 0..<taps { values[(channel / 4 * taps + t) * 4 + channel % 4] = w[channel * taps + t] }
            }
        case .grouped:
            values = Array(w)
        }
        return (values, biasValues)
    }

    /// `values` as fp16, two to a 32-bit word (the first in the low half:
    /// `unpackHalf2x16`'s order), round to nearest even; the words' bits are
    /// carried in Floats for `GPUContext.makeBuffer(floats:)`.
    static func packedHalves(_ values: [Float]) -> [Float] {
        (0..<(values.count + 1) / 2).map { k in
            let low = UInt32(Float16(values[2 * k]).bitPattern)
            let high = 2 * k + 1 < values.count ? UInt32(Float16(values[2 * k + 1]).bitPattern) : 0
            return Float(bitPattern: low | high << 16)
        }
    }

    public var hasGPUImplementation: Bool { true }

    /// Creates the pipeline of this convolution's form and block for
    /// `inputShapes` and uploads its weights and bias, arranged for that
    /// block, to `context`'s device, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws {
        _ = try prepared(on: context, inputShape: inputShapes.first)
    }

    /// The block for an input of `inputShape` on `device` (the options' if forced).
    func block(forInputShape inputShape: [Int]?, on device: GPUDeviceInfo? = nil) -> ConvolutionBlock {
        block(forInputShape: inputShape, onCPU: device.map { $0.kind == .cpu } ?? true,
              sharedMemory: device.map { Int($0.maxComputeSharedMemorySize) } ?? 16_384)
    }

    /// The block for a device that is or is not a CPU and lets a workgroup
    /// declare `sharedMemory` bytes (tests simulate devices through this).
    func block(forInputShape inputShape: [Int]?, onCPU: Bool, sharedMemory: Int) -> ConvolutionBlock {
        var chosen = ConvolutionBlock.single
        // By the rank rule a [N, K] input (a Gemm's, prepared so) is the N×K×1×1 image it encodes.
        if let inputShape, let g = try? geometry(forInputShape: inputShape.count == 2 ? inputShape + [1, 1] : inputShape) {
            chosen = ConvolutionBlock.chosen(for: variant, outputSlices: (outputChannels + 3) / 4,
                                             width: g.outWidth, height: g.outHeight, batch: g.batch,
                                             onCPU: onCPU, sharedMemory: sharedMemory)
        }
        var block = gpuOptions.block ?? ConvolutionGPUOptions.environment.block ?? chosen
        block.sharedWeights = gpuOptions.sharedWeights ?? ConvolutionGPUOptions.environment.sharedWeights
            ?? chosen.sharedWeights
        // Only dense convolutions block over output slices or share weights; grouped ones not at all.
        if variant != .dense { block.outputSlices = 1; block.sharedWeights = false }
        if variant == .grouped { block.texels = 1 }
        // Forced or not, a tile the device cannot hold falls back to the unshared form.
        if block.sharedTileBytes > sharedMemory { block.sharedWeights = false }
        return block
    }

    /// Whether the dense weights are stored as fp16. Off unless forced:
    /// fp16 weights add up to 2^-11 relative error a product, which the
    /// parity rule's 1e-3 cannot absorb beside the fp16 store at K = 4608,
    /// and on lavapipe the unpacking costs more than the halved reads save.
    var usesFloat16Weights: Bool {
        variant == .dense && (gpuOptions.float16Weights ?? ConvolutionGPUOptions.environment.float16Weights ?? false)
    }

    /// The kernel and weights for the block `inputShape` takes, made once per
    /// context and block: plans of other shapes share the layer.
    private func prepared(on context: GPUContext, inputShape: [Int]?) throws -> PreparedConvolution {
        let block = block(forInputShape: inputShape, on: context.deviceInfo)
        return try gpuState.value(on: context, key: block) {
            let f16 = usesFloat16Weights
            var defines = [(variant.define, "1")]
            if block != .single {
                defines += [("LK_OUT_BLOCK", "\(block.outputSlices)"), ("LK_X_BLOCK", "\(block.texels)")]
            }
            if f16 { defines.append(("LK_WEIGHTS_F16", "1")) }
            if block.sharedWeights {
                defines += [("LK_SHARED_WEIGHTS", "1"), ("LK_SHARED_K", "\(ConvolutionBlock.sharedDepth)")]
            }
            let values = Self.arrangedForDevice(weights: weights, bias: bias, group: group, block: block)
            return try PreparedConvolution(
                kernel: BuiltInShaders.conv2d.kernel(on: context, defines: defines),
                weights: context.makeBuffer(floats: f16 ? Self.packedHalves(values.weights) : values.weights),
                bias: context.makeBuffer(floats: values.bias), block: block, defines: defines)
        }
    }

    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        try encode(commandBuffer: commandBuffer, inputs: inputs, outputs: outputs, epilogue: nil)
    }

    /// This convolution's kernel with `epilogue` fused into it: the same
    /// form and block as its own kernel (prepared for `inputShape` on this
    /// context), compiled once per context, block and chain (the context's cache).
    func kernel(on context: GPUContext, inputShape: [Int]?, epilogue: Epilogue) throws -> GPUKernel<ConvolutionConstants> {
        let state = try prepared(on: context, inputShape: inputShape)
        return try BuiltInShaders.conv2d.kernel(on: context, name: "Conv+\(epilogue.name) (conv2d.comp, \(variant.rawValue))",
                                                defines: state.defines, epilogue: epilogue)
    }

    /// `encode(commandBuffer:inputs:outputs:)` with a fused epilogue: its
    /// kernel (`kernel(on:epilogue:)`) and the bindings it adds.
    func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage],
                epilogue: (kernel: GPUKernel<ConvolutionConstants>, bindings: [GPUBinding])?) throws {
        let g = try checkedGeometry(inputShapes: inputs.map(\.shape), outputShapes: outputs.map(\.shape))
        let (input, output) = (inputs[0], outputs[0])
        let state = try prepared(on: commandBuffer.context, inputShape: input.shape)
        let constants = ConvolutionConstants(
            shape: output.shapeConstants,
            inputWidth: UInt32(g.width), inputHeight: UInt32(g.height), inputChannels: UInt32(inputChannels),
            inputSlices: UInt32(input.slices), kernelWidth: UInt32(kernelWidth), kernelHeight: UInt32(kernelHeight),
            strideX: UInt32(strides[1]), strideY: UInt32(strides[0]),
            dilationX: UInt32(dilations[1]), dilationY: UInt32(dilations[0]),
            padLeft: Int32(g.padLeft), padTop: Int32(g.padTop),
            groupInputChannels: UInt32(inputChannels / group), groupOutputChannels: UInt32(outputChannels / group))
        try commandBuffer.dispatch(epilogue?.kernel ?? state.kernel, images: [input, output],
                                   buffers: [state.weights, state.bias], trailing: epilogue?.bindings ?? [],
                                   constants: constants, threads: Self.threads(for: state.block, output: output))
    }

    /// The invocations `conv2d.comp` runs for `block` over `output`: one a
    /// block, counted flat in workgroups of 64 (see the shader), the
    /// workgroups as x by z with x at most 65,535 (Vulkan's least
    /// `maxComputeWorkGroupCount`). With shared weights a workgroup holds
    /// blocks of one batch item and output-slice block only, so each map's
    /// blocks are counted in whole groups of 64.
    static func threads(for block: ConvolutionBlock, output: SliceImage) -> (x: Int, y: Int, z: Int) {
        let blocks = (output.slices + block.outputSlices - 1) / block.outputSlices
        let spatial = (output.width + block.texels - 1) / block.texels * output.height
        let groups = block.sharedWeights ? (spatial + 63) / 64 * output.batch * blocks
            : (spatial * output.batch * blocks + 63) / 64
        let across = min(groups, 65_535)
        return (x: 8 * across, y: 8, z: (groups + across - 1) / across)
    }
}
