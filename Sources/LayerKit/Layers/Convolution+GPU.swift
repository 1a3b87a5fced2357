import VulkanCompute

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

extension Convolution {
    /// Bytes of `conv2d.comp`'s push constants: the output's shape fields
    /// and 14 more 4-byte values.
    static let pushConstantSize = GPUContext.shapeConstantSize + 14 * 4

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
    static func arrangedForDevice(weights: Tensor, bias: Tensor?, group: Int) -> (DeviceConstants, DeviceConstants) {
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
        return (DeviceConstants(values), DeviceConstants(biasValues))
    }

    public var hasGPUImplementation: Bool { true }

    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        let g = try checkedGeometry(inputShapes: inputs.map(\.shape), outputShapes: outputs.map(\.shape))
        let (input, output, context) = (inputs[0], outputs[0], commandBuffer.context)
        let pipeline = try context.pipeline(shader: "conv2d.comp", defines: [variant.define: "1"], images: 2,
                                            buffers: 2, pushConstantSize: Self.pushConstantSize)
        var constants = output.shapeConstants
        for value in [g.width, g.height, inputChannels, input.slices, kernelWidth, kernelHeight,
                      strides[1], strides[0], dilations[1], dilations[0]] {
            constants.append(UInt32(value))
        }
        constants.append(Int32(g.padLeft))
        constants.append(Int32(g.padTop))
        constants.append(UInt32(inputChannels / group))
        constants.append(UInt32(outputChannels / group))
        try commandBuffer.dispatch(pipeline, images: [input, output],
                                   buffers: [deviceWeights.buffer(on: context), deviceBias.buffer(on: context)],
                                   constants: constants, threads: output.threads)
    }
}
