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

/// What a convolution keeps on one context: its pipeline, and its weights
/// and bias in device buffers.
struct PreparedConvolution {
    let kernel: GPUKernel<ConvolutionConstants>
    let weights: GPUBuffer
    let bias: GPUBuffer
}

extension Convolution {
    var variant: ConvolutionVariant {
        ConvolutionVariant(group: group, inputChannels: inputChannels, outputChannels: outputChannels)
    }

    /// The weights as `conv2d.comp` reads them, and the bias as one vec4 per
    /// output slice (zeros past M, or everywhere without a bias).
    ///
    /// dense: a mat4 per (output slice, tap, input slice), tap = ky*kW + kx,
    /// whose column i, row o is w[4*os + o][4*is + i] (zero past M or C), so
    /// that `matrix * texel` is the four outputs' sums over four inputs.
    /// depthwise: a vec4 per (slice, tap). grouped: the ONNX layout as is.
    static func arrangedForDevice(weights: Tensor, bias: Tensor?, group: Int) -> (weights: [Float], bias: [Float]) {
        let (m, cg, taps) = (weights.shape[0], weights.shape[1], weights.shape[2] * weights.shape[3])
        let c = cg * group
        let (outSlices, inSlices) = ((m + 3) / 4, (c + 3) / 4)
        var biasValues = [Float](repeating: 0, count: outSlices * 4)
        if let bias { biasValues.replaceSubrange(0..<m, with: bias.elements) }
        let w = weights.elements
        var values: [Float]
        switch ConvolutionVariant(group: group, inputChannels: c, outputChannels: m) {
        case .dense:
            values = [Float](repeating: 0, count: outSlices * taps * inSlices * 16)
            for o in 0..<m {
                for i in 0..<c {
                    for t in 0..<taps {
                        values[((o / 4 * taps + t) * inSlices + i / 4) * 16 + i % 4 * 4 + o % 4] = w[(o * c + i) * taps + t]
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

    public var hasGPUImplementation: Bool { true }

    /// Creates the pipeline of this convolution's form and uploads its
    /// weights and bias to `context`'s device, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try prepared(on: context) }

    private func prepared(on context: GPUContext) throws -> PreparedConvolution {
        try gpuState.value(on: context) {
            try PreparedConvolution(
                kernel: BuiltInShaders.conv2d.kernel(on: context, defines: [(variant.define, "1")]),
                weights: context.makeBuffer(floats: deviceValues.weights),
                bias: context.makeBuffer(floats: deviceValues.bias))
        }
    }

    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        try encode(commandBuffer: commandBuffer, inputs: inputs, outputs: outputs, epilogue: nil)
    }

    /// This convolution's kernel with `epilogue` fused into it, compiled
    /// once per context and chain (the context's cache).
    func kernel(on context: GPUContext, epilogue: Epilogue) throws -> GPUKernel<ConvolutionConstants> {
        try BuiltInShaders.conv2d.kernel(on: context, name: "Conv+\(epilogue.name) (conv2d.comp, \(variant.rawValue))",
                                         defines: [(variant.define, "1")], epilogue: epilogue)
    }

    /// `encode(commandBuffer:inputs:outputs:)` with a fused epilogue: its
    /// kernel (`kernel(on:epilogue:)`) and the bindings it adds.
    func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage],
                epilogue: (kernel: GPUKernel<ConvolutionConstants>, bindings: [GPUBinding])?) throws {
        let g = try checkedGeometry(inputShapes: inputs.map(\.shape), outputShapes: outputs.map(\.shape))
        let (input, output) = (inputs[0], outputs[0])
        let state = try prepared(on: commandBuffer.context)
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
                                   constants: constants, threads: output.threads)
    }
}
