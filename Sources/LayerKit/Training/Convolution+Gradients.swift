import CKernels
import Synchronization

/// The backward pass of `Conv` (1-D and 2-D, every stride, dilation, pad,
/// `auto_pad` and group count). For y = b + x ⋆ w:
///
/// - dL/dx runs through the runner (on the GPU when training there) as one
///   of two layers. At stride 1 with pads no wider than the dilated kernel
///   less one (the usual case): the `Convolution` of dL/dy with the weights
///   flipped and their channel axes swapped within each group, pads
///   (dilated kernel - 1 - forward pad) each side, so the forward's fast
///   kernels (Winograd included) do it. Otherwise: the transposed
///   convolution of dL/dy with the same weights (`ConvTranspose` reads
///   `[M, C/group, kH, kW]` as its `[C_in, C_out/group, ...]`), with the
///   forward's leading pads and whatever makes the output the input's
///   extent: the forward's windows end at most a stride short of the padded
///   input, so the cells past the last window (no gradient) are an
///   `output_padding` below the stride, which ConvTranspose always takes.
/// - dL/dw per group is dL/dy (rows: output channels; columns: image and
///   output pixel) times the im2col matrix of the input (rows: image and
///   output pixel; columns: input channel and tap), `lk_sgemm_f32_packed_b`
///   on cache-sized blocks of im2col, on the CPU; depthwise: dot products of
///   shifted rows.
/// - dL/db is the sum of dL/dy over the batch and the pixels (in Double).
extension Convolution: DifferentiableLayer {
    /// `weights` (node input 1) in the ONNX shape, `[M, C/group, kH, kW]`
    /// (1-D: `[M, C/group, k]`), and `bias` (node input 2, `[M]`) if the
    /// layer has one.
    var trainableParameters: [TrainableParameter] {
        let onnxWeights = spatialRank == 1 ? (try? weights.reshaped(to: Array(weights.shape[..<3]))) ?? weights : weights
        return [TrainableParameter(role: "weights", nodeInput: 1, value: onnxWeights)]
            + (bias.map { [TrainableParameter(role: "bias", nodeInput: 2, value: $0)] } ?? [])
    }

    /// A convolution of the same geometry (strides, dilations, padding,
    /// group, spatial rank) with the new `weights` and/or `bias`.
    func replacingParameters(_ values: [String: Tensor]) throws -> Layer {
        let values = try checkedReplacements(values)
        guard let newWeights = values["weights"] else {
            throw LayerKitError.invalidParameter("Conv: the weights are missing")
        }
        let layer = try Convolution(weights: newWeights, bias: values["bias"], strides: strides, dilations: dilations,
                                    padding: padding, group: group)
        layer.threadCount = threadCount
        layer.gpuOptions = gpuOptions
        return layer
    }

    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        let x = try step.checkedInputs(1, layer: layerName)[0]
        let g = try geometry(forInputShape: x.shape)
        let dy = try step.checkedOutputGradient(0, layer: layerName)
        // 1-D tensors are the [N, C, L, 1] images they are by the rank rule.
        let image = try dy.reshaped(to: [g.batch, outputChannels, g.outHeight, g.outWidth])
        var result = LayerGradients(inputs: [nil])
        if step.needsGradient(ofInput: 0) {
            let layer = try inputGradientLayers.layer(for: x.shape) { try inputGradientLayer(geometry: g) }
            let dx = try runner.run(layer, [image])[0]
            result.inputs[0] = try dx.reshaped(to: x.shape)
        }
        if step.parameterRoles.contains("weights") {
            let dw = try runner.cpu("Conv weight gradient (im2col and matrix products)") {
                try weightGradient(input: x, outputGradient: image, geometry: g)
            }
            result.parameters["weights"] = try dw.reshaped(to: trainableParameters[0].value.shape)
        }
        if step.parameterRoles.contains("bias"), let bias {
            result.parameters["bias"] = try runner.cpu("Conv bias gradient (sum over batch and pixels)") {
                try Tensor(shape: bias.shape, values: ChannelPlanes(image.shape).sums(image).map { Float($0) })
            }
        }
        return result
    }

    /// The layer taking dL/dy (`[N, M, OH, OW]`) to dL/dx (`[N, C, H, W]`)
    /// for a run of geometry `g`: the flipped convolution where it applies,
    /// else the transposed one.
    func inputGradientLayer(geometry g: Geometry) throws -> Layer {
        if strides == [1, 1], let flipped = try flippedConvolution(geometry: g) { return flipped }
        return try transposedConvolution(geometry: g)
    }

    /// At stride 1: dL/dx[i] = sum over taps t of w[t] * dL/dy[i + pad - t * dilation],
    /// the convolution of dL/dy with the kernel flipped (tap k - 1 - t) and
    /// pads (k - 1) * dilation - pad before, whatever gives the input's
    /// extent after; nil when a forward pad is wider than that.
    func flippedConvolution(geometry g: Geometry) throws -> Convolution? {
        let inputs = [g.height, g.width], outputs = [g.outHeight, g.outWidth], heads = [g.padTop, g.padLeft]
        let kernel = [kernelHeight, kernelWidth]
        var pads = [0, 0, 0, 0]
        for a in 0..<2 {
            let reach = (kernel[a] - 1) * dilations[a]
            let begin = reach - heads[a], end = inputs[a] + reach - outputs[a] - begin
            guard begin >= 0, end >= 0 else { return nil }
            (pads[a], pads[2 + a]) = (begin, end)
        }
        let (cg, mg, taps) = (inputChannels / group, outputChannels / group, kernelHeight * kernelWidth)
        // [C, M/group, kH, kW]: channel axes swapped within each group, taps reversed.
        let flipped = try Tensor(shape: [inputChannels, mg, kernelHeight, kernelWidth])
        for gi in 0..<group {
            for o in 0..<mg {
                for ci in 0..<cg {
                    let source = weights.dataPointer + ((gi * mg + o) * cg + ci) * taps
                    let target = flipped.dataPointer + ((gi * cg + ci) * mg + o) * taps
                    for t in 0..<taps { target[taps - 1 - t] = source[t] }
                }
            }
        }
        let layer = try Convolution(weights: flipped, strides: [1, 1], dilations: dilations, padding: .explicit(pads),
                                    group: group)
        layer.threadCount = threadCount
        return layer
    }

    /// The `ConvTranspose` taking dL/dy to dL/dx for a run of geometry `g`.
    func transposedConvolution(geometry g: Geometry) throws -> ConvTranspose {
        let inputs = [g.height, g.width], outputs = [g.outHeight, g.outWidth], heads = [g.padTop, g.padLeft]
        let kernel = [kernelHeight, kernelWidth]
        // The cells the transposed convolution spreads to past the input's
        // last cell (negative: input cells no window reached).
        let tails = (0..<2).map { (a: Int) -> Int in
            let spread = strides[a] * (outputs[a] - 1) + (kernel[a] - 1) * dilations[a] + 1
            return spread - heads[a] - inputs[a]
        }
        return try ConvTranspose(weights: weights, strides: strides, dilations: dilations,
                                 padding: .explicit(heads + tails.map { max(0, $0) }),
                                 outputPadding: tails.map { max(0, -$0) }, group: group)
    }

    /// Output channels a group from which the weight gradient is a matrix
    /// product; fewer (depthwise) take dot products.
    static let productChannels = 4

    /// The most floats of packed dL/dy^T one packing holds (16 MiB); a
    /// larger batch runs in spans of images.
    static let gradientColumnBudget = 1 << 22

    /// The most rows of a group's dL/dw^T one task computes (the blocks
    /// depend on the layer, never on the thread count).
    static let gradientRowBlock = 32

    /// Columns (image pixels) of one pass's im2col block: a task's block,
    /// `gradientRowBlock` rows of about this many floats, stays in cache.
    static let gradientPassPixels = 2048

    /// dL/dw, `[M, C/group, kH, kW]`, from the input `[N, C, ...]` and
    /// dL/dy as the `[N, M, OH, OW]` image. With a few output channels a
    /// group (depthwise): dot products of shifted rows, no im2col. Else, per
    /// group and block of `gradientRowBlock` rows (channel, tap) of dL/dw^T
    /// (`[C/group * taps, M/group]`), one task: per pass of images, the
    /// block's rows of im2col(x) (`[rows, images * pixels]`, a stretch of
    /// input row at a time, in a buffer of its own that stays in cache) times
    /// dL/dy^T (`[images * pixels, M/group]`, packed once, at most
    /// `columnBudget` floats of it at a time: spans of whole passes),
    /// accumulated by `lk_sgemm_f32_packed_b`. Every element is one chain of
    /// products in (image, pixel) order whatever the thread count.
    func weightGradient(input: Tensor, outputGradient dy: Tensor, geometry g: Geometry,
                        columnBudget: Int = Convolution.gradientColumnBudget) throws -> Tensor {
        let dw = try Tensor(shape: weights.shape)
        let (m, c, group) = (outputChannels, inputChannels, group)
        let (cg, mg) = (c / group, m / group)
        let r = cg * kernelHeight * kernelWidth
        let pixels = g.outHeight * g.outWidth
        guard pixels > 0, g.batch > 0 else { return dw }
        let threads = min(threadCount, CPUThreads.current,
                          max(1, g.batch * pixels * r * m / Convolution.minimumWorkPerThread))
        guard mg >= Self.productChannels else {
            directWeightGradient(input: input, outputGradient: dy, geometry: g, into: dw, threads: threads)
            return dw
        }
        // A small layer's rows in blocks of 8 or more, so its few rows still make
        // tasks for every thread (3 channels x 9 taps: 4 blocks of 8); the blocks
        // depend on the rows alone, and each row's sums on nothing else.
        let block = max(8, min(Self.gradientRowBlock, (r + Self.gradientRowBlock - 1) / Self.gradientRowBlock * 8))
        let blocksPerGroup = (r + block - 1) / block
        let run = max(1, min(g.batch, Self.gradientPassPixels / pixels))
        // dL/dy^T per group and pass of images, as the B operand's panels
        // (lk_sgemm_pack_b's layout: panels of nr output channels, a row of
        // nr a pixel, zeros past the group's channels), written straight
        // from dL/dy so no task packs it again.
        // A group of at most 16 output channels would fill half of an
        // AVX-512 panel (32 columns) with zeros; AVX2's panels are 16 wide,
        // for the same instructions per useful column and half the packing.
        let isa = mg <= lk_sgemm_column_block(LK_ISA_AVX2_FMA) && lk_kernels_isa() == LK_ISA_AVX512F
            ? LK_ISA_AVX2_FMA : lk_kernels_isa()
        let nr = lk_sgemm_column_block(isa)
        let padded = (mg + nr - 1) / nr * nr
        // Images a packing holds: whole passes, within the column budget.
        let span = max(1, columnBudget / max(1, group * pixels * padded) / run) * run
        let packed = try Tensor(shape: [group * min(g.batch, span) * pixels * padded])
        let sums = try Tensor(shape: [group * r * mg])
        let failed = Atomic(false)
        let (kernel, strides, dilations) = ([kernelHeight, kernelWidth], strides, dilations)
        for start in stride(from: 0, to: g.batch, by: span) {
            let images = min(span, g.batch - start)
            forEachChunk(count: images, chunkSize: 1, threadCount: threads) { chunk in
                for n in chunk.lazy.map({ start + $0 }) {
                    let first = n / run * run
                    let k = min(run, g.batch - first) * pixels
                    for gi in 0..<group {
                        let pass = packed.dataPointer + (gi * images + first - start) * pixels * padded
                        for j0 in stride(from: 0, to: padded, by: nr) {
                            let panel = pass + j0 * k + (n - first) * pixels * nr
                            let columns = max(0, min(nr, mg - j0))
                            let source = dy.dataPointer + (n * m + gi * mg + j0) * pixels
                            // A pixel's row of nr: its `columns` channels' planes transposed, then zeros.
                            lk_transpose_f32(columns, pixels, source, pixels, panel, nr)
                            if columns < nr {
                                for p in 0..<pixels { (panel + p * nr + columns).update(repeating: 0, count: nr - columns) }
                            }
                        }
                    }
                }
            }
            forEachChunk(count: group * blocksPerGroup, chunkSize: 1, threadCount: threads) { tasks in
                let columns = UnsafeMutablePointer<Float>.allocate(capacity: block * run * pixels)
                defer { columns.deallocate() }
                for task in tasks {
                    let (gi, row0) = (task / blocksPerGroup, task % blocksPerGroup * block)
                    let rows = min(block, r - row0)
                    for first in stride(from: start, to: start + images, by: run) {
                        let count = min(run, g.batch - first), k = count * pixels
                        for i in 0..<count {
                            let source = input.dataPointer + ((first + i) * c + gi * cg) * g.height * g.width
                            for row in 0..<rows {
                                Convolution.im2colRow(row0 + row, of: source, kernel: kernel, strides: strides,
                                                      dilations: dilations, geometry: g,
                                                      into: columns + row * k + i * pixels)
                            }
                        }
                        let gradients = packed.dataPointer + (gi * images + first - start) * pixels * padded
                        if lk_sgemm_f32_packed_b(isa, rows, mg, k, 1, columns, k, 1, gradients,
                                                 sums.dataPointer + (gi * r + row0) * mg, mg, nil, nil, 1) != 0 {
                            failed.store(true, ordering: .relaxed)
                        }
                    }
                }
            }
        }
        if failed.load(ordering: .relaxed) {
            throw LayerKitError.unsupported("Conv weight gradient: out of memory for the packing buffers")
        }
        for gi in 0..<group {
            for row in 0..<r {
                for o in 0..<mg { dw[((gi * mg + o) * r) + row] = sums[(gi * r + row) * mg + o] }
            }
        }
        return dw
    }

    /// Row `row` (input channel, tap) of one image's im2col matrix (its
    /// `OH * OW` pixels) from the image's group channels at `source`, for a
    /// `[kH, kW]` kernel.
    static func im2colRow(_ row: Int, of source: UnsafePointer<Float>, kernel: [Int], strides: [Int], dilations: [Int],
                          geometry g: Geometry, into out: UnsafeMutablePointer<Float>) {
        let (kh, kw, sh, sw, dh, dwl) = (kernel[0], kernel[1], strides[0], strides[1], dilations[0], dilations[1])
        let (ci, th, tw) = (row / (kh * kw), row / kw % kh, row % kw)
        let (height, width, outHeight, outWidth) = (g.height, g.width, g.outHeight, g.outWidth)
        let plane = source + ci * height * width
        if kh == 1, kw == 1, sh == 1, sw == 1, g.padTop == 0, g.padLeft == 0, outHeight == height, outWidth == width {
            // A pointwise layer's row is the channel's plane.
            out.update(from: plane, count: height * width)
            return
        }
        let (low, high, offset) = Self.windowColumns(tap: tw, dilation: dwl, stride: sw, pad: g.padLeft,
                                                     width: width, outWidth: outWidth)
        for oh in 0..<outHeight {
            let line = out + oh * outWidth
            let ih = oh * sh - g.padTop + th * dh
            guard ih >= 0, ih < height, low < high else {
                line.update(repeating: 0, count: outWidth)
                continue
            }
            line.update(repeating: 0, count: low)
            (line + high).update(repeating: 0, count: outWidth - high)
            let input = plane + ih * width + offset
            if sw == 1 {
                (line + low).update(from: input + low, count: high - low)
            } else {
                for ow in low..<high { line[ow] = input[ow * sw] }
            }
        }
    }

    /// The output columns `low..<high` whose tap `tap` lands inside an input
    /// row, and the input column of output column 0's tap (`offset`, may be
    /// negative: output column ow reads input column offset + ow * stride).
    static func windowColumns(tap: Int, dilation: Int, stride: Int, pad: Int, width: Int,
                              outWidth: Int) -> (low: Int, high: Int, offset: Int) {
        let offset = tap * dilation - pad
        let low = offset >= 0 ? 0 : (stride - 1 - offset) / stride
        let high = width - 1 - offset < 0 ? 0 : min(outWidth, (width - 1 - offset) / stride + 1)
        return (low, max(low, high), offset)
    }

    /// dL/dw for a few output channels a group (depthwise), straight from x
    /// and dL/dy: per output channel (one task each) and input channel, per
    /// image, x's plane is copied zero-padded to every cell a window reads
    /// and dL/dy's rows to a multiple of eight columns (zeros past OW), then
    /// each tap sums the products of dL/dy's rows with x's rows shifted by
    /// the tap, eight columns a step into eight lanes, in (image, row,
    /// column) order.
    func directWeightGradient(input: Tensor, outputGradient dy: Tensor, geometry g: Geometry, into dw: Tensor,
                              threads: Int) {
        let (kh, kw, sh, sw, dh, dwl) = (kernelHeight, kernelWidth, strides[0], strides[1], dilations[0], dilations[1])
        let (m, c, group) = (outputChannels, inputChannels, group)
        let (cg, mg, taps) = (c / group, m / group, kernelHeight * kernelWidth)
        let (height, width, outHeight, outWidth) = (g.height, g.width, g.outHeight, g.outWidth)
        let (plane, pixels) = (height * width, outHeight * outWidth)
        let rowWidth = (outWidth + 7) / 8 * 8
        let paddedHeight = (outHeight - 1) * sh + (kh - 1) * dh + 1
        let paddedWidth = (rowWidth - 1) * sw + (kw - 1) * dwl + 1
        forEachChunk(count: m, chunkSize: 1, threadCount: threads) { channels in
            let padded = UnsafeMutablePointer<Float>.allocate(capacity: paddedHeight * paddedWidth)
            let rows = UnsafeMutablePointer<Float>.allocate(capacity: outHeight * rowWidth)
            var lanes = [SIMD8<Float>](repeating: SIMD8(), count: taps)
            defer {
                padded.deallocate()
                rows.deallocate()
            }
            for oc in channels {
                let gi = oc / mg
                for ci in 0..<cg {
                    for t in 0..<taps { lanes[t] = SIMD8() }
                    for n in 0..<g.batch {
                        let image = input.dataPointer + (n * c + gi * cg + ci) * plane
                        let gradient = dy.dataPointer + (n * m + oc) * pixels
                        padded.update(repeating: 0, count: paddedHeight * paddedWidth)
                        for y in 0..<paddedHeight {
                            let ih = y - g.padTop
                            guard ih >= 0, ih < height else { continue }
                            let (from, to) = (max(0, g.padLeft), min(paddedWidth, width + g.padLeft))
                            guard from < to else { continue }
                            (padded + y * paddedWidth + from).update(from: image + ih * width + from - g.padLeft,
                                                                     count: to - from)
                        }
                        for oh in 0..<outHeight {
                            (rows + oh * rowWidth).update(from: gradient + oh * outWidth, count: outWidth)
                            (rows + oh * rowWidth + outWidth).update(repeating: 0, count: rowWidth - outWidth)
                        }
                        for th in 0..<kh {
                            for tw in 0..<kw {
                                var sum = lanes[th * kw + tw]
                                for oh in 0..<outHeight {
                                    let line = padded + (oh * sh + th * dh) * paddedWidth + tw * dwl
                                    let a = rows + oh * rowWidth
                                    for j in stride(from: 0, to: rowWidth, by: 8) {
                                        let b: SIMD8<Float>
                                        if sw == 1 {
                                            b = UnsafeRawPointer(line + j).loadUnaligned(as: SIMD8<Float>.self)
                                        } else {
                                            b = SIMD8((0..<8).lazy.map { line[(j + $0) * sw] })
                                        }
                                        sum += UnsafeRawPointer(a + j).loadUnaligned(as: SIMD8<Float>.self) * b
                                    }
                                }
                                lanes[th * kw + tw] = sum
                            }
                        }
                    }
                    for t in 0..<taps { dw[(oc * cg + ci) * taps + t] = lanes[t].sum() }
                }
            }
        }
    }
}
