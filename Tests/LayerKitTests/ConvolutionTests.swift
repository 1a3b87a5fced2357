import CKernels
import Testing
@testable import LayerKit

/// One convolution to check: shapes and attributes.
struct ConvCase: CustomTestStringConvertible, Sendable {
    var input: [Int]  // N, C, H, W
    var outputChannels: Int
    var kernel: [Int]  // kH, kW
    var strides = [1, 1]
    var dilations = [1, 1]
    var padding: Padding = .explicit([0, 0, 0, 0])
    var group = 1
    var bias = true

    var testDescription: String {
        "\(Tensor.describe(input)) -> \(outputChannels) k\(Tensor.describe(kernel)) s\(strides) d\(dilations) "
            + "\(padding) g\(group)\(bias ? "" : " no bias")"
    }

    var weightShape: [Int] { [outputChannels, input[1] / group] + kernel }
    /// Products summed per output.
    var terms: Int { input[1] / group * kernel[0] * kernel[1] }

    func layer(seed: UInt64) throws -> Convolution {
        try Convolution(weights: seededTensor(weightShape, seed: seed),
                        bias: bias ? seededTensor([outputChannels], seed: seed + 1) : nil,
                        strides: strides, dilations: dilations, padding: padding, group: group)
    }

    /// Top, left, bottom, right pads by ONNX's auto_pad rules, worked out here.
    var pads: [Int] {
        switch padding {
        case .explicit(let pads): return pads
        case .valid: return [0, 0, 0, 0]
        case .sameUpper, .sameLower:
            var begin = [0, 0], end = [0, 0]
            for axis in 0..<2 {
                let size = input[2 + axis], stride = strides[axis]
                let out = (size + stride - 1) / stride
                let total = max(0, (out - 1) * stride + (kernel[axis] - 1) * dilations[axis] + 1 - size)
                begin[axis] = padding == .sameUpper ? total / 2 : (total + 1) / 2
                end[axis] = total - begin[axis]
            }
            return begin + end
        }
    }

    /// The output shape and values, in float64 by the definition.
    func reference(x: Tensor, w: Tensor, bias: Tensor?) -> (shape: [Int], values: [Double]) {
        let (n, c, h, wd) = (input[0], input[1], input[2], input[3])
        let (kh, kw, m, p) = (kernel[0], kernel[1], outputChannels, pads)
        let oh = (h + p[0] + p[2] - (kh - 1) * dilations[0] - 1) / strides[0] + 1
        let ow = (wd + p[1] + p[3] - (kw - 1) * dilations[1] - 1) / strides[1] + 1
        let (cg, mg) = (c / group, m / group)
        var out: [Double] = []
        for b in 0..<n {
            for o in 0..<m {
                for oy in 0..<oh {
                    for ox in 0..<ow {
                        var sum = bias.map { Double($0[o]) } ?? 0
                        for i in 0..<cg {
                            let ic = o / mg * cg + i
                            for ky in 0..<kh {
                                for kx in 0..<kw {
                                    let iy = oy * strides[0] + ky * dilations[0] - p[0]
                                    let ix = ox * strides[1] + kx * dilations[1] - p[1]
                                    guard iy >= 0, iy < h, ix >= 0, ix < wd else { continue }
                                    sum += Double(w[((o * cg + i) * kh + ky) * kw + kx])
                                        * Double(x[((b * c + ic) * h + iy) * wd + ix])
                                }
                            }
                        }
                        out.append(sum)
                    }
                }
            }
        }
        return ([n, m, oh, ow], out)
    }
}

struct ConvolutionTests {
    static let cases: [ConvCase] = [
        ConvCase(input: [1, 3, 8, 8], outputChannels: 16, kernel: [3, 3], padding: .explicit([1, 1, 1, 1])),
        ConvCase(input: [2, 5, 7, 9], outputChannels: 6, kernel: [3, 3], strides: [2, 1], dilations: [1, 2],
                 padding: .explicit([0, 1, 2, 1])),
        ConvCase(input: [2, 6, 5, 5], outputChannels: 5, kernel: [1, 1], bias: false),
        ConvCase(input: [1, 5, 6, 7], outputChannels: 3, kernel: [1, 1], strides: [2, 2], padding: .explicit([1, 0, 0, 1])),
        ConvCase(input: [1, 4, 9, 11], outputChannels: 8, kernel: [5, 5], padding: .explicit([2, 2, 2, 2])),
        ConvCase(input: [2, 3, 10, 4], outputChannels: 5, kernel: [7, 1], padding: .explicit([3, 0, 3, 0])),
        ConvCase(input: [2, 6, 6, 5], outputChannels: 4, kernel: [3, 3], padding: .explicit([1, 1, 1, 1]), group: 2),
        ConvCase(input: [1, 6, 9, 8], outputChannels: 9, kernel: [3, 3], strides: [2, 2],
                 padding: .explicit([1, 1, 0, 0]), group: 3, bias: false),
        ConvCase(input: [2, 5, 6, 7], outputChannels: 5, kernel: [3, 3], padding: .explicit([1, 1, 1, 1]), group: 5),
        ConvCase(input: [1, 8, 9, 10], outputChannels: 8, kernel: [3, 3], strides: [2, 2], dilations: [2, 1],
                 padding: .explicit([2, 1, 1, 0]), group: 8, bias: false),
        ConvCase(input: [1, 3, 5, 6], outputChannels: 6, kernel: [3, 3], padding: .sameUpper, group: 3),
        ConvCase(input: [1, 3, 7, 8], outputChannels: 5, kernel: [3, 3], strides: [2, 2], padding: .sameUpper),
        ConvCase(input: [2, 3, 7, 8], outputChannels: 5, kernel: [4, 4], padding: .sameUpper),
        ConvCase(input: [2, 3, 7, 8], outputChannels: 5, kernel: [4, 4], padding: .sameLower),
        ConvCase(input: [1, 3, 7, 8], outputChannels: 4, kernel: [2, 3], strides: [2, 3], dilations: [2, 1],
                 padding: .sameLower),
        ConvCase(input: [1, 5, 5, 6], outputChannels: 3, kernel: [3, 3], padding: .valid),
        ConvCase(input: [2, 5, 1, 1], outputChannels: 3, kernel: [3, 3], padding: .explicit([1, 1, 1, 1])),
        ConvCase(input: [2, 6, 1, 1], outputChannels: 7, kernel: [1, 1]),
        // Large enough for threads and for K past one 256-deep block.
        ConvCase(input: [1, 32, 32, 32], outputChannels: 32, kernel: [3, 3], padding: .explicit([1, 1, 1, 1])),
        ConvCase(input: [2, 64, 13, 11], outputChannels: 20, kernel: [3, 3], padding: .sameUpper),
        // Taps mostly over padding (Convolution+ValidTaps.swift): DeepLabV3's
        // ASPP shape scaled down, bands of 2 and 3 taps; a dilation past the
        // map (the centre tap alone); strided, uneven pads; outputs that
        // read no input cell (their bias).
        ConvCase(input: [2, 24, 9, 10], outputChannels: 20, kernel: [3, 3], dilations: [4, 3],
                 padding: .explicit([4, 3, 4, 3])),
        ConvCase(input: [1, 16, 7, 7], outputChannels: 33, kernel: [3, 3], dilations: [9, 9],
                 padding: .explicit([9, 9, 9, 9])),
        ConvCase(input: [1, 6, 11, 9], outputChannels: 8, kernel: [3, 2], strides: [2, 1], dilations: [5, 6],
                 padding: .explicit([6, 2, 3, 5]), group: 2),
        ConvCase(input: [1, 3, 4, 4], outputChannels: 5, kernel: [1, 1], padding: .explicit([2, 3, 1, 2])),
    ]

    @Test(arguments: cases)
    func cpuMatchesTheDefinition(_ c: ConvCase) throws {
        let layer = try c.layer(seed: 11)
        let x = try seededTensor(c.input, seed: 5)
        let expected = c.reference(x: x, w: layer.weights, bias: layer.bias)
        #expect(try layer.outputShapes(forInputShapes: [c.input]) == [expected.shape])
        let y = try Tensor(shape: expected.shape)
        for threads in [1, 2] {
            layer.threadCount = threads
            // The direct path: this tolerance is a direct sum's (Winograd's error, bounded
            // by the sum of |w||x| terms instead, is checked in WinogradTests).
            try Convolution.$forcedCPUAlgorithm.withValue(.direct) { try layer.evaluate(inputs: [x], outputs: [y]) }
            expectClose(y.values, expected.values, relative: sumTolerance(terms: c.terms),
                        "\(c.testDescription) on \(threads) threads")
        }
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: cases)
    func gpuMatchesTheDefinition(_ c: ConvCase) throws {
        let layer = try c.layer(seed: 12)
        #expect(layer.hasGPUImplementation)
        let x = try seededTensor(c.input, seed: 6).roundedToHalf()
        let expected = c.reference(x: x, w: layer.weights, bias: layer.bias)
        let y = try runOnGPU(layer, input: x, outputShape: expected.shape)
        expectClose(y.values, expected.values, relative: 1e-3, c.testDescription)
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func gpuPaddingLanesStayZero() throws {
        let context = try TestGPU.get()
        for c in [ConvCase(input: [2, 5, 3, 4], outputChannels: 6, kernel: [3, 3], padding: .sameUpper),
                  ConvCase(input: [2, 5, 3, 4], outputChannels: 5, kernel: [3, 3], padding: .sameUpper, group: 5),
                  ConvCase(input: [2, 6, 3, 4], outputChannels: 9, kernel: [1, 1], group: 3)] {
            let layer = try c.layer(seed: 3)
            let input = try context.upload(seededTensor(c.input, seed: 4))
            let output = try context.makeSliceImage(shape: [2, c.outputChannels, 3, 4])
            let commands = try context.makeCommandBuffer()
            try layer.encode(commandBuffer: commands, inputs: [input], outputs: [output])
            try commands.commit()
            try commands.waitUntilCompleted()
            let lanes = try TestGPU.rawLanes(of: output)
            for (i, value) in lanes.enumerated() where (i / 12 / 4 % output.slices) * 4 + i % 4 >= c.outputChannels {
                #expect(value.bitPattern == 0, "\(c.testDescription): padding lane \(i) is \(value)")
            }
        }
    }

    /// Convolutions that reach every path of lk_conv2d_f32 on each
    /// instruction set: the direct loop with rows wider than two vectors,
    /// strides 2 and 3 (column phases) with dilation, output channel blocks
    /// that do not divide a group's channels, an odd number of narrow rows
    /// (taken two at a time); a pointwise product; and im2col (narrow rows,
    /// many channels per group; the direct loop on the scalar path).
    static let pathCases: [ConvCase] = [
        ConvCase(input: [1, 8, 9, 37], outputChannels: 8, kernel: [3, 3], padding: .explicit([1, 2, 1, 0]), group: 8),
        ConvCase(input: [1, 4, 11, 40], outputChannels: 10, kernel: [3, 3], strides: [2, 2], dilations: [1, 2],
                 padding: .explicit([1, 3, 2, 0])),
        ConvCase(input: [1, 6, 10, 17], outputChannels: 4, kernel: [2, 3], strides: [3, 3],
                 padding: .explicit([2, 1, 0, 2]), group: 2),
        ConvCase(input: [1, 3, 7, 5], outputChannels: 6, kernel: [3, 3], padding: .explicit([1, 1, 1, 1]), group: 3),
        ConvCase(input: [1, 6, 5, 9], outputChannels: 7, kernel: [1, 1]),
        ConvCase(input: [1, 5, 4, 2], outputChannels: 9, kernel: [3, 2], padding: .explicit([1, 0, 1, 1])),
        cases[1],
    ]

    /// lk_conv2d_f32 on every instruction set this CPU has, output pixels in
    /// three uneven pieces, against the same definition.
    @Test func everyInstructionSetAndPixelRange() throws {
        for c in Self.pathCases {
            let layer = try c.layer(seed: 21)
            let x = try seededTensor(c.input, seed: 22)
            let expected = c.reference(x: x, w: layer.weights, bias: layer.bias)
            let g = try layer.geometry(forInputShape: c.input)
            var shape = lk_conv2d_shape(
                channels: c.input[1], height: c.input[2], width: c.input[3], out_channels: c.outputChannels,
                out_height: g.outHeight, out_width: g.outWidth, kernel_h: c.kernel[0], kernel_w: c.kernel[1],
                stride_h: c.strides[0], stride_w: c.strides[1], dilation_h: c.dilations[0],
                dilation_w: c.dilations[1], pad_top: g.padTop, pad_left: g.padLeft, group: c.group)
            let pixels = g.outHeight * g.outWidth
            let pieces = [(0, pixels / 3), (pixels / 3, pixels / 2), (pixels / 3 + pixels / 2, pixels - pixels / 3 - pixels / 2)]
            for isa in [LK_ISA_SCALAR, LK_ISA_AVX2_FMA, LK_ISA_AVX512F] where isa.rawValue <= lk_kernels_isa().rawValue {
                let y = try Tensor(shape: expected.shape)
                for n in 0..<c.input[0] {
                    for (first, count) in pieces {
                        #expect(lk_conv2d_f32_isa(isa, &shape, x.dataPointer + n * x.count / c.input[0],
                                                  layer.weights.dataPointer, layer.bias?.dataPointer,
                                                  y.dataPointer + n * y.count / c.input[0], first, count) == 0)
                    }
                }
                expectClose(y.values, expected.values, relative: sumTolerance(terms: c.terms),
                            "\(c.testDescription) \(String(cString: lk_isa_name(isa)))")
            }
        }
    }

    @Test func autoPadResolvesAsONNXSays() throws {
        // 7 rows, kernel 4, stride 1: total pad 3; SAME_UPPER puts 2 at the end.
        let upper = try Convolution(weights: Tensor(shape: [1, 1, 4, 4]), padding: .sameUpper)
        let lower = try Convolution(weights: Tensor(shape: [1, 1, 4, 4]), padding: .sameLower)
        #expect(try upper.geometry(forInputShape: [1, 1, 7, 7]).padTop == 1)
        #expect(try lower.geometry(forInputShape: [1, 1, 7, 7]).padTop == 2)
        // Stride 2: the output is ceil(7 / 2) = 4.
        let strided = try Convolution(weights: Tensor(shape: [1, 1, 3, 3]), strides: [2, 2], padding: .sameUpper)
        #expect(try strided.outputShapes(forInputShapes: [[1, 1, 7, 8]]) == [[1, 1, 4, 4]])
        let valid = try Convolution(weights: Tensor(shape: [2, 1, 3, 3]), padding: .valid)
        #expect(try valid.outputShapes(forInputShapes: [[3, 1, 7, 8]]) == [[3, 2, 5, 6]])
        // A 1x1 kernel with stride 5 over 9 cells: ONNX's SAME_LOWER asks for
        // -1 leading cells; the convolution starts at the first cell, output ceil(9 / 5).
        let narrow = try Convolution(weights: Tensor(shape: [1, 1, 1, 1]), strides: [5, 5], padding: .sameLower)
        let g = try narrow.geometry(forInputShape: [1, 1, 9, 9])
        #expect((g.outHeight, g.outWidth, g.padTop, g.padLeft) == (2, 2, 0, 0))
    }

    /// DeepLabV3's ASPP on its 33x33 map: the bands of each dilation, by
    /// hand from which of the taps -d, 0, +d land in [0, 33); an ordinary
    /// 3x3 layer with pads of 1, and one that would split into too many
    /// rectangles, keep the padded loop.
    @Test func validTapBandsOfDilatedKernels() {
        let bands = { (d: Int) in
            Convolution.tapBands(outputs: 33, input: 33, kernel: 3, stride: 1, dilation: d, pad: d)
                .map { [$0.outputs.lowerBound, $0.outputs.upperBound, $0.taps.lowerBound, $0.taps.upperBound] }
        }
        #expect(bands(12) == [[0, 12, 1, 3], [12, 21, 0, 3], [21, 33, 0, 2]])
        #expect(bands(24) == [[0, 9, 1, 3], [9, 24, 1, 2], [24, 33, 0, 2]])
        #expect(bands(36) == [[0, 33, 1, 2]])
        // Stride 2, pad 1 past a 1x1 kernel: the first and last outputs read no cell.
        #expect(Convolution.tapBands(outputs: 4, input: 5, kernel: 1, stride: 2, dilation: 1, pad: 1)
                    .map { [$0.outputs.count, $0.taps.count] } == [[1, 0], [2, 1], [1, 0]])
        func shape(_ size: Int, dilation: Int) -> lk_conv2d_shape {
            lk_conv2d_shape(channels: 8, height: size, width: size, out_channels: 8, out_height: size, out_width: size,
                            kernel_h: 3, kernel_w: 3, stride_h: 1, stride_w: 1, dilation_h: dilation,
                            dilation_w: dilation, pad_top: dilation, pad_left: dilation, group: 1)
        }
        #expect(Convolution.validTapBands(shape(33, dilation: 12)) != nil)
        #expect(Convolution.validTapBands(shape(56, dilation: 1)) == nil)
        #expect(Convolution.validTapBands(shape(33, dilation: 2)) == nil)
        // ConvNeXt's last stage: 57% of the 7x7 taps inside, but 49 rectangles.
        var convNeXt = shape(7, dilation: 1)
        (convNeXt.kernel_h, convNeXt.kernel_w, convNeXt.pad_top, convNeXt.pad_left) = (7, 7, 3, 3)
        #expect(Convolution.validTapBands(convNeXt) == nil)
    }

    @Test func theGeometryIsPaddingsWindow() throws {
        // One rule resolves pads for Conv and pooling alike.
        for padding in [Padding.explicit([1, 0, 2, 1]), .sameUpper, .sameLower, .valid] {
            let conv = try Convolution(weights: Tensor(shape: [1, 1, 3, 2]), strides: [2, 1], dilations: [1, 2], padding: padding)
            let g = try conv.geometry(forInputShape: [1, 1, 9, 8])
            let rows = try padding.window(axis: 0, of: 2, input: 9, kernel: 3, stride: 2, dilation: 1, ceilMode: false, layer: "x")
            let columns = try padding.window(axis: 1, of: 2, input: 8, kernel: 2, stride: 1, dilation: 2, ceilMode: false, layer: "x")
            #expect((g.outHeight, g.padTop, g.outWidth, g.padLeft) == (rows.output, rows.begin, columns.output, columns.begin),
                    "\(padding)")
        }
        let tooSmall = try Convolution(weights: Tensor(shape: [1, 1, 5, 1]))
        #expect(throws: LayerKitError.shapeMismatch(
            "Conv: the window (5 cells with dilation) is larger than the padded input (4) on spatial axis 0")) {
            try tooSmall.outputShapes(forInputShapes: [[1, 1, 4, 4]])
        }
    }

    @Test func badWeightsAndAttributesThrow() throws {
        let w = try Tensor(shape: [4, 2, 3, 3])
        // Rank 3 is a 1-D convolution; ranks 2 and 5 are neither (3-D is Convolution3D's).
        #expect(throws: LayerKitError.self) { try Convolution(weights: Tensor(shape: [4, 2])) }
        #expect(throws: LayerKitError.self) { try Convolution(weights: Tensor(shape: [4, 2, 3, 3, 3])) }
        #expect(throws: LayerKitError.self) { try Convolution(weights: Tensor(shape: [4, 2, 3]), strides: [1, 2]) }
        #expect(throws: LayerKitError.self) { try Convolution(weights: Tensor(shape: [4, 2, 3]), padding: .explicit([0, 1, 0, 0])) }
        #expect(throws: LayerKitError.self) { try Convolution(weights: Tensor(shape: [4, 0, 3, 3])) }
        #expect(throws: LayerKitError.self) { try Convolution(weights: w, group: 3) }
        #expect(throws: LayerKitError.self) { try Convolution(weights: w, group: 0) }
        #expect(throws: LayerKitError.self) { try Convolution(weights: w, bias: Tensor(shape: [3])) }
        #expect(throws: LayerKitError.self) { try Convolution(weights: w, strides: [1, 0]) }
        #expect(throws: LayerKitError.self) { try Convolution(weights: w, strides: [1]) }
        #expect(throws: LayerKitError.self) { try Convolution(weights: w, dilations: [0, 1]) }
        #expect(throws: LayerKitError.self) { try Convolution(weights: w, padding: .explicit([1, 1, 1])) }
        #expect(throws: LayerKitError.self) { try Convolution(weights: w, padding: .explicit([0, -1, 0, 0])) }
    }

    @Test func badInputShapesThrow() throws {
        let layer = try Convolution(weights: Tensor(shape: [4, 2, 3, 3]), group: 2)
        #expect(try layer.outputShapes(forInputShapes: [[1, 4, 3, 3]]) == [[1, 4, 1, 1]])
        for shape in [[1, 2, 5, 5], [1, 4, 5], [1, 4, 2, 5], [1, 4, 5, 2]] {
            #expect(throws: LayerKitError.self, "\(shape)") { try layer.outputShapes(forInputShapes: [shape]) }
        }
        #expect(throws: LayerKitError.self) { try layer.outputShapes(forInputShapes: [[1, 4, 3, 3], [1, 4, 3, 3]]) }
        #expect(throws: LayerKitError.self) {
            try layer.evaluate(inputs: [Tensor(shape: [1, 4, 3, 3])], outputs: [Tensor(shape: [1, 4, 2, 1])])
        }
    }
}
