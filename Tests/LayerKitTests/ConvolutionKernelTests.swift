import CKernels
import Testing
@testable import LayerKit

/// The packed-weight convolution kernels (`lk_conv2d_f32_packed`) path by
/// path and instruction set by instruction set, and `Convolution`'s split
/// of a run over threads, against the float64 definition
/// (`ConvCase.reference`). Every path computes each output as bias, then
/// one product a tap in (c, ky, kx) order, whatever the channel range or
/// pixel range of the call: paths, splits and thread counts agree bitwise.
@Suite struct ConvolutionKernelTests {
    /// Odd sizes: channels 1, 3, 17, 33; widths 1 to 37; strides 1 and 2;
    /// asymmetric pads 0 to 3; dilation 2; groups 2; batch 2; depthwise
    /// 3x3 and 5x5 at strides 1 and 2; 1x1 at strides 1 and 2; a 7x7 stem.
    static let cases: [ConvCase] = [
        ConvCase(input: [2, 3, 9, 11], outputChannels: 17, kernel: [3, 3], padding: .explicit([1, 0, 2, 3])),
        ConvCase(input: [1, 17, 13, 37], outputChannels: 33, kernel: [3, 3], strides: [2, 2],
                 padding: .explicit([0, 2, 3, 1])),
        ConvCase(input: [1, 33, 7, 7], outputChannels: 33, kernel: [3, 3], padding: .explicit([1, 1, 1, 1])),
        // The channels path's own: 32+ output and 16+ input channels a group.
        ConvCase(input: [2, 17, 5, 13], outputChannels: 70, kernel: [3, 3], strides: [2, 1],
                 padding: .explicit([0, 3, 1, 2])),
        ConvCase(input: [1, 34, 9, 1], outputChannels: 66, kernel: [3, 3], dilations: [2, 2],
                 padding: .explicit([2, 2, 2, 2]), group: 2),
        ConvCase(input: [2, 17, 5, 1], outputChannels: 3, kernel: [3, 3], padding: .explicit([1, 1, 1, 1])),
        ConvCase(input: [1, 1, 6, 19], outputChannels: 1, kernel: [3, 3], dilations: [2, 2],
                 padding: .explicit([2, 3, 0, 1])),
        ConvCase(input: [1, 6, 12, 13], outputChannels: 34, kernel: [3, 3], strides: [1, 2], dilations: [2, 2],
                 padding: .explicit([2, 1, 3, 0]), group: 2),
        // 1x1: straight on the input (stride 1), gathered (stride 2, pads);
        // on a 7x7 map with 40 output channels along the channels.
        ConvCase(input: [2, 17, 10, 10], outputChannels: 9, kernel: [1, 1]),
        ConvCase(input: [2, 20, 7, 7], outputChannels: 40, kernel: [1, 1]),
        ConvCase(input: [1, 33, 9, 23], outputChannels: 17, kernel: [1, 1], group: 1),
        ConvCase(input: [2, 17, 10, 11], outputChannels: 33, kernel: [1, 1], strides: [2, 2]),
        ConvCase(input: [1, 8, 9, 9], outputChannels: 24, kernel: [1, 1], padding: .explicit([1, 1, 0, 2]), group: 2),
        // Depthwise.
        ConvCase(input: [2, 17, 15, 37], outputChannels: 17, kernel: [3, 3], padding: .explicit([1, 1, 1, 1]),
                 group: 17),
        ConvCase(input: [1, 17, 15, 36], outputChannels: 17, kernel: [3, 3], strides: [2, 2],
                 padding: .explicit([0, 1, 2, 3]), group: 17),
        ConvCase(input: [1, 33, 9, 23], outputChannels: 33, kernel: [5, 5], strides: [2, 2],
                 padding: .explicit([2, 2, 2, 2]), group: 33),
        ConvCase(input: [2, 3, 8, 1], outputChannels: 3, kernel: [5, 5], padding: .explicit([2, 2, 2, 2]), group: 3,
                 bias: false),
        ConvCase(input: [1, 3, 11, 29], outputChannels: 3, kernel: [3, 3], dilations: [2, 2],
                 padding: .explicit([3, 2, 1, 0]), group: 3),
        // The depthwise plane path's shapes (stride 1, output rows as wide
        // as input rows; forced on and off below): MobileNet's 960 channels
        // 7x7, 14x14 with asymmetric pads (13 output rows), 5x5 and
        // dilation 2; MobileNet's 56 -> 28 stride 2 at 17 channels.
        ConvCase(input: [1, 960, 7, 7], outputChannels: 960, kernel: [3, 3], padding: .explicit([1, 1, 1, 1]),
                 group: 960),
        ConvCase(input: [2, 19, 14, 14], outputChannels: 19, kernel: [3, 3], padding: .explicit([0, 2, 1, 0]),
                 group: 19),
        ConvCase(input: [1, 17, 14, 14], outputChannels: 17, kernel: [5, 5], padding: .explicit([2, 2, 2, 2]),
                 group: 17),
        ConvCase(input: [1, 17, 9, 11], outputChannels: 17, kernel: [3, 3], dilations: [2, 2],
                 padding: .explicit([2, 2, 2, 2]), group: 17, bias: false),
        ConvCase(input: [2, 17, 56, 56], outputChannels: 17, kernel: [3, 3], strides: [2, 2],
                 padding: .explicit([1, 1, 1, 1]), group: 17),
        // The stem's shape, small: 7x7 stride 2, 3 -> 16.
        ConvCase(input: [1, 3, 23, 29], outputChannels: 16, kernel: [7, 7], strides: [2, 2],
                 padding: .explicit([3, 3, 3, 3])),
    ]

    /// Each path, the depthwise one three times: its kernels that read the
    /// input unpadded (plane, stride 2) forced off (rows on a padded copy),
    /// forced on wherever they fit, and by shape.
    static let paths: [(String, lk_conv_path, Int32)] = [
        ("direct", LK_CONV_DIRECT, 0), ("im2col", LK_CONV_IM2COL, 0), ("pointwise", LK_CONV_POINTWISE, 0),
        ("depthwise rows", LK_CONV_DEPTHWISE, -1), ("depthwise unpadded", LK_CONV_DEPTHWISE, 1),
        ("depthwise", LK_CONV_DEPTHWISE, 0), ("channels", LK_CONV_CHANNELS, 0),
    ]

    static func shape(_ c: ConvCase, _ layer: Convolution) throws -> lk_conv2d_shape {
        let g = try layer.geometry(forInputShape: c.input)
        return lk_conv2d_shape(
            channels: c.input[1], height: c.input[2], width: c.input[3], out_channels: c.outputChannels,
            out_height: g.outHeight, out_width: g.outWidth, kernel_h: c.kernel[0], kernel_w: c.kernel[1],
            stride_h: c.strides[0], stride_w: c.strides[1], dilation_h: c.dilations[0],
            dilation_w: c.dilations[1], pad_top: g.padTop, pad_left: g.padLeft, group: c.group)
    }

    /// Every path that fits each case on every instruction set this CPU
    /// has: within the float64 bound, bitwise equal to each other, and a
    /// run split into channel blocks x 13-pixel ranges bitwise equal to one
    /// whole call.
    @Test(arguments: cases)
    func everyPathAndSplitAgrees(_ c: ConvCase) throws {
        let layer = try c.layer(seed: 31)
        let x = try seededTensor(c.input, seed: 32)
        let expected = c.reference(x: x, w: layer.weights, bias: layer.bias)
        var shape = try Self.shape(c, layer)
        let (batch, pixels) = (c.input[0], Int(shape.out_height * shape.out_width))
        let mg = c.outputChannels / c.group
        var pathsRun = 0
        for isa in [LK_ISA_SCALAR, LK_ISA_AVX2_FMA, LK_ISA_AVX512F] where isa.rawValue <= lk_kernels_isa().rawValue {
            let isaName = String(cString: lk_isa_name(isa))
            var first: [Float]?
            for (name, path, planeMode) in Self.paths {
                // Both depthwise kernels give the same bits, so a test
                // running beside this one sees no change from the switch.
                lk_depthwise_force_unpadded(planeMode)
                defer { lk_depthwise_force_unpadded(0) }
                var packed = [Float](repeating: .nan, count: lk_conv2d_packed_size(isa, path, &shape))
                #expect(lk_conv2d_pack_weights(isa, path, &shape, layer.weights.dataPointer, &packed) == 0)
                let block = lk_conv2d_channel_block(isa, path, &shape)
                var work = [Float](repeating: .nan, count: max(1, lk_conv2d_work_size(isa, path, &shape, pixels)))
                let whole = try Tensor(shape: expected.shape), split = try Tensor(shape: expected.shape)
                var status: Int32 = 0
                for n in 0..<batch {
                    status |= lk_conv2d_f32_packed(
                        isa, path, &shape, x.dataPointer + n * x.count / batch, packed, layer.bias?.dataPointer,
                        whole.dataPointer + n * whole.count / batch, 0, c.outputChannels, 0, pixels, &work)
                }
                let depthwise = c.group == c.input[1] && c.group == c.outputChannels
                let pointwise = c.kernel == [1, 1] && c.strides == [1, 1] && c.pads == [0, 0, 0, 0]
                let fits = path == LK_CONV_DEPTHWISE ? depthwise
                    : path == LK_CONV_POINTWISE ? pointwise && !depthwise : !depthwise
                #expect((status == 0) == fits, "\(c.testDescription) \(name) \(isaName)")
                guard status == 0 else { continue }
                pathsRun += 1
                expectClose(whole.values, expected.values, relative: sumTolerance(terms: c.terms),
                            "\(c.testDescription) \(name) \(isaName)")
                if let first { #expect(whole.values == first, "\(c.testDescription) \(name) \(isaName) vs the first path") }
                first = first ?? whole.values
                // Channel ranges of two blocks (within a group), pixel ranges of 13.
                var smallWork = [Float](repeating: .nan, count: max(1, lk_conv2d_work_size(isa, path, &shape, 13)))
                for n in 0..<batch {
                    for g in 0..<c.group {
                        for m0 in stride(from: g * mg, to: (g + 1) * mg, by: 2 * block) {
                            for p0 in stride(from: 0, to: pixels, by: 13) {
                                status |= lk_conv2d_f32_packed(
                                    isa, path, &shape, x.dataPointer + n * x.count / batch, packed,
                                    layer.bias?.dataPointer, split.dataPointer + n * split.count / batch,
                                    m0, min(m0 + 2 * block, (g + 1) * mg), p0, min(13, pixels - p0), &smallWork)
                            }
                        }
                    }
                }
                #expect(status == 0)
                #expect(split.values == whole.values, "\(c.testDescription) \(name) \(isaName): split differs")
            }
        }
        #expect(pathsRun > 0)
    }

    /// Ranges off a channel block, past the end, or a path that does not fit are refused, nothing written.
    @Test func badRangesAreRefused() throws {
        let c = ConvCase(input: [1, 4, 5, 5], outputChannels: 20, kernel: [3, 3])
        let layer = try c.layer(seed: 1)
        var shape = try Self.shape(c, layer)
        let isa = lk_kernels_isa()
        var packed = [Float](repeating: 0, count: lk_conv2d_packed_size(isa, LK_CONV_DIRECT, &shape))
        _ = lk_conv2d_pack_weights(isa, LK_CONV_DIRECT, &shape, layer.weights.dataPointer, &packed)
        var work = [Float](repeating: 0, count: lk_conv2d_work_size(isa, LK_CONV_DIRECT, &shape, 9))
        let x = try seededTensor(c.input, seed: 2), y = try Tensor(shape: [1, 20, 3, 3])
        let block = lk_conv2d_channel_block(isa, LK_CONV_DIRECT, &shape)
        #expect(block > 1)
        #expect(lk_conv2d_f32_packed(isa, LK_CONV_DIRECT, &shape, x.dataPointer, packed, nil, y.dataPointer,
                                     1, 20, 0, 9, &work) == -1)
        #expect(lk_conv2d_f32_packed(isa, LK_CONV_DIRECT, &shape, x.dataPointer, packed, nil, y.dataPointer,
                                     0, 21, 0, 9, &work) == -1)
        #expect(lk_conv2d_f32_packed(isa, LK_CONV_DIRECT, &shape, x.dataPointer, packed, nil, y.dataPointer,
                                     0, 20, 5, 5, &work) == -1)
        #expect(lk_conv2d_f32_packed(isa, LK_CONV_DEPTHWISE, &shape, x.dataPointer, packed, nil, y.dataPointer,
                                     0, 20, 0, 9, &work) == -1)
        #expect(lk_conv2d_f32_packed(isa, LK_CONV_POINTWISE, &shape, x.dataPointer, packed, nil, y.dataPointer,
                                     0, 20, 0, 9, &work) == -1)
        #expect(y.values.allSatisfy { $0 == 0 })
    }

    /// The layer on 1, 2, 3 and 16 threads (the split forced on these small
    /// layers), and with the direct path forced: bitwise equal, within the
    /// bound.
    static let layerCases: [ConvCase] = [
        ConvCase(input: [2, 17, 23, 37], outputChannels: 33, kernel: [3, 3], padding: .explicit([1, 2, 0, 1])),
        ConvCase(input: [1, 64, 7, 7], outputChannels: 72, kernel: [3, 3], padding: .explicit([1, 1, 1, 1])),
        ConvCase(input: [2, 33, 20, 21], outputChannels: 40, kernel: [1, 1]),
        ConvCase(input: [1, 33, 20, 21], outputChannels: 40, kernel: [1, 1], strides: [2, 2]),
        ConvCase(input: [2, 33, 29, 31], outputChannels: 33, kernel: [3, 3], strides: [2, 2],
                 padding: .explicit([1, 1, 1, 1]), group: 33),
        ConvCase(input: [1, 6, 17, 19], outputChannels: 34, kernel: [3, 3], dilations: [2, 2],
                 padding: .explicit([2, 2, 2, 2]), group: 2),
        ConvCase(input: [1, 3, 45, 47], outputChannels: 64, kernel: [7, 7], strides: [2, 2],
                 padding: .explicit([3, 3, 3, 3])),
        // Run by rectangles of valid taps (Convolution+ValidTaps.swift); the
        // forced path below is the padded loop over every tap.
        ConvCase(input: [1, 40, 13, 13], outputChannels: 36, kernel: [3, 3], dilations: [5, 5],
                 padding: .explicit([5, 5, 5, 5])),
        ConvCase(input: [2, 32, 9, 9], outputChannels: 40, kernel: [3, 3], dilations: [10, 10],
                 padding: .explicit([10, 10, 10, 10])),
    ]

    @Test(arguments: layerCases)
    func threadCountsAgreeBitwise(_ c: ConvCase) throws {
        let layer = try c.layer(seed: 41)
        layer.minimumWorkPerThread = 1
        let x = try seededTensor(c.input, seed: 42)
        let expected = c.reference(x: x, w: layer.weights, bias: layer.bias)
        var results: [[Float]] = []
        for threads in [1, 2, 3, 16] {
            layer.threadCount = threads
            let y = try Tensor(shape: expected.shape)
            try CPUThreads.with(threads) { try layer.evaluate(inputs: [x], outputs: [y]) }
            expectClose(y.values, expected.values, relative: sumTolerance(terms: c.terms), "\(c) on \(threads) threads")
            results.append(y.values)
        }
        for (i, threads) in [2, 3, 16].enumerated() {
            #expect(results[i + 1] == results[0], "\(c.testDescription): \(threads) threads differ from 1")
        }
        // A path whose weights are in the other layout (packed on first use).
        guard !(c.group == c.input[1] && c.group == c.outputChannels) else { return }
        layer.forcedPath = layer.packedLayout == LK_CONV_CHANNELS ? LK_CONV_DIRECT : LK_CONV_CHANNELS
        layer.threadCount = 3
        let y = try Tensor(shape: expected.shape)
        try CPUThreads.with(3) { try layer.evaluate(inputs: [x], outputs: [y]) }
        #expect(y.values == results[0], "\(c.testDescription): forced path \(layer.forcedPath?.rawValue ?? 0) differs")
    }

    /// The split gives every thread work, covers every channel once on
    /// channel blocks, and keeps small layers on one thread.
    @Test func workSplitBalances() {
        typealias Split = Convolution.WorkSplit
        // resnet18's last 3x3: 512 channels on 7x7, blocks of 8.
        for threads in [2, 3, 16, 48] {
            let s = Split.make(batch: 1, outputChannels: 512, group: 1, block: 8, pixels: 49, rows: 7,
                               work: 512 * 49 * 4608, threads: threads)
            #expect(s.threads == threads)
            #expect(s.channelRanges.count * s.rowTiles >= threads, "\(threads) threads: \(s)")
            #expect(s.channelRanges.first?.lowerBound == 0 && s.channelRanges.last?.upperBound == 512)
            for (a, b) in zip(s.channelRanges, s.channelRanges.dropFirst()) { #expect(a.upperBound == b.lowerBound) }
            #expect(s.channelRanges.allSatisfy { $0.lowerBound % 8 == 0 && !$0.isEmpty })
            let sizes = s.channelRanges.map(\.count)
            #expect(sizes.max()! - sizes.min()! <= 8)
        }
        // 56x56 on 2 threads: row tiles of 9-10 rows, every row once.
        let s = Split.make(batch: 1, outputChannels: 64, group: 1, block: 8, pixels: 56 * 56, rows: 56,
                           work: 64 * 3136 * 576, threads: 2)
        #expect(s.rowTiles * s.channelRanges.count >= 4)
        #expect((0..<s.rowTiles).map { s.pixels(ofTile: $0).count }.reduce(0, +) == 56 * 56)
        #expect((0..<s.rowTiles).allSatisfy { s.pixels(ofTile: $0).count % 56 == 0 && s.pixels(ofTile: $0).count <= s.largestTile })
        // Groups: ranges start on a block of their group (mg = 17, block 8: 0, 8, 16, 17, 25, 33).
        let g = Split.make(batch: 1, outputChannels: 34, group: 2, block: 8, pixels: 100, rows: 10,
                           work: 1 << 30, threads: 16)
        let starts = Set([0, 8, 16, 17, 25, 33, 34])
        #expect(g.channelRanges.allSatisfy { starts.contains($0.lowerBound) && starts.contains($0.upperBound) })
        // Channels first (depthwise, 1x1): MobileNetV2's 384 depthwise channels on
        // 14x14 split by channels alone; 4 blocks for 2 threads still split rows too.
        let byChannels = Split.make(batch: 1, outputChannels: 384, group: 384, block: 1, pixels: 196, rows: 14,
                                    work: 384 * 196 * 27, threads: 2, channelsFirst: true)
        #expect(byChannels.rowTiles == 1 && byChannels.channelRanges.count == 6, "\(byChannels)")
        let few = Split.make(batch: 1, outputChannels: 32, group: 1, block: 8, pixels: 56 * 56, rows: 56,
                             work: 1 << 26, threads: 2, channelsFirst: true)
        #expect(few.rowTiles > 1 && few.rowTiles * few.channelRanges.count >= 6, "\(few)")
        // Small work: one thread, one item.
        let small = Split.make(batch: 1, outputChannels: 16, group: 1, block: 8, pixels: 64, rows: 8,
                               work: 16 * 64 * 27, threads: 16)
        #expect(small.threads == 1 && small.channelRanges == [0..<16] && small.rowTiles == 1)
    }
}
