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
///   output pixel; columns: input channel and tap), one `lk_sgemm_f32` a
///   block of output channels, on the CPU.
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
                try Self.channelSums(image, shape: bias.shape)
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

    /// The most floats one pass's im2col matrix holds (16 MiB); a batch
    /// whose matrix is larger runs in runs of images.
    static let gradientColumnBudget = 1 << 22

    /// dL/dw, `[M, C/group, kH, kW]`, from the input `[N, C, ...]` and
    /// dL/dy as the `[N, M, OH, OW]` image. Per run of images and group,
    /// dL/dw^T (`[C/group * taps, M/group]`) += im2col(x) (`[C/group * taps,
    /// images * pixels]`, each row copied a stretch of input row at a time)
    /// times dL/dy^T (`[images * pixels, M]`), then transposed into dw.
    func weightGradient(input: Tensor, outputGradient dy: Tensor, geometry g: Geometry) throws -> Tensor {
        let dw = try Tensor(shape: weights.shape)
        let (kh, kw, sh, sw, dh, dwl) = (kernelHeight, kernelWidth, strides[0], strides[1], dilations[0], dilations[1])
        let (m, c, group) = (outputChannels, inputChannels, group)
        let (cg, mg) = (c / group, m / group)
        let r = cg * kh * kw
        let (height, width, outHeight, outWidth) = (g.height, g.width, g.outHeight, g.outWidth)
        let (pixels, plane, padTop, padLeft) = (g.outHeight * g.outWidth, g.height * g.width, g.padTop, g.padLeft)
        guard pixels > 0, g.batch > 0 else { return dw }
        let run = max(1, min(g.batch, Self.gradientColumnBudget / max(1, pixels * max(r * group, m))))
        let columns = try Tensor(shape: [run * pixels * r * group])
        let transposed = try Tensor(shape: [mg >= Self.productChannels ? run * pixels * m : 0])
        let sums = try Tensor(shape: [group * r * mg])
        let threads = min(threadCount, CPUThreads.current,
                          max(1, g.batch * pixels * r * m / Convolution.minimumWorkPerThread))
        // Row blocks of each group's dw^T: a task's elements are its own, and
        // every element sums its images in order, whatever the thread count.
        let block = max(1, min(r, (r * group + 2 * threads - 1) / (2 * threads)))
        let blocksPerGroup = (r + block - 1) / block
        let failed = Atomic(false)
        for first in stride(from: 0, to: g.batch, by: run) {
            let count = min(run, g.batch - first), k = count * pixels
            // im2col: group gi's matrix is [r, k], row (channel, tap), column (image, pixel).
            forEachChunk(count: count * group, chunkSize: 1, threadCount: threads) { items in
                for item in items {
                    let (i, gi) = (item / group, item % group)
                    let source = input.dataPointer + ((first + i) * c + gi * cg) * plane
                    for row in 0..<r {
                        let (ci, th, tw) = (row / (kh * kw), row / kw % kh, row % kw)
                        let target = columns.dataPointer + (gi * r + row) * k + i * pixels
                        // The output columns whose tap lands inside the input row.
                        let offset = tw * dwl - padLeft
                        let low = offset >= 0 ? 0 : (sw - 1 - offset) / sw
                        let high = width - 1 - offset < 0 ? 0 : min(outWidth, (width - 1 - offset) / sw + 1)
                        for oh in 0..<outHeight {
                            let out = target + oh * outWidth
                            let ih = oh * sh - padTop + th * dh
                            guard ih >= 0, ih < height, low < high else {
                                out.update(repeating: 0, count: outWidth)
                                continue
                            }
                            out.update(repeating: 0, count: low)
                            (out + high).update(repeating: 0, count: outWidth - high)
                            let line = source + ci * plane + ih * width + offset
                            if sw == 1 {
                                (out + low).update(from: line + low, count: high - low)
                            } else {
                                for ow in low..<high { out[ow] = line[ow * sw] }
                            }
                        }
                    }
                }
            }
            guard mg >= Self.productChannels else {
                // A few output channels a group (depthwise): dot products of
                // im2col rows with dL/dy rows, a matrix product's panels wasted.
                forEachChunk(count: group, chunkSize: 1, threadCount: threads) { groups in
                    for gi in groups {
                        for row in 0..<r {
                            let column = columns.dataPointer + (gi * r + row) * k
                            for o in 0..<mg {
                                var sum: Float = 0
                                for i in 0..<count {
                                    sum += Self.dot(column + i * pixels,
                                                    dy.dataPointer + ((first + i) * m + gi * mg + o) * pixels, pixels)
                                }
                                sums[(gi * r + row) * mg + o] += sum
                            }
                        }
                    }
                }
                continue
            }
            // dL/dy^T: row (image, pixel), column output channel, in tiles
            // of 16 x 16 (a column of the target at a time would miss the cache).
            forEachChunk(count: count, chunkSize: 1, threadCount: threads) { images in
                for i in images {
                    let source = dy.dataPointer + (first + i) * m * pixels
                    let target = transposed.dataPointer + i * pixels * m
                    for o0 in stride(from: 0, to: m, by: 16) {
                        for p0 in stride(from: 0, to: pixels, by: 16) {
                            for o in o0..<min(m, o0 + 16) {
                                for p in p0..<min(pixels, p0 + 16) { target[p * m + o] = source[o * pixels + p] }
                            }
                        }
                    }
                }
            }
            forEachChunk(count: group * blocksPerGroup, chunkSize: 1, threadCount: threads) { tasks in
                for task in tasks {
                    let (gi, row) = (task / blocksPerGroup, task % blocksPerGroup * block)
                    let rows = min(block, r - row)
                    if lk_sgemm_f32(rows, mg, k, 1, columns.dataPointer + (gi * r + row) * k, k, 1,
                                    transposed.dataPointer + gi * mg, m, sums.dataPointer + (gi * r + row) * mg, mg,
                                    nil, nil, 1) != 0 {
                        failed.store(true, ordering: .relaxed)
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

    /// Output channels a group from which the weight gradient is a matrix
    /// product; fewer (depthwise) take dot products.
    static let productChannels = 4

    /// The dot product of `count` floats at `a` and `b`, eight lanes at a
    /// time, in a fixed order.
    static func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ count: Int) -> Float {
        var lanes = SIMD8<Float>(), i = 0
        while i + 8 <= count {
            lanes += UnsafeRawPointer(a + i).loadUnaligned(as: SIMD8<Float>.self)
                * UnsafeRawPointer(b + i).loadUnaligned(as: SIMD8<Float>.self)
            i += 8
        }
        var sum = lanes.sum()
        while i < count {
            sum += a[i] * b[i]
            i += 1
        }
        return sum
    }

    /// The sums over the batch and the pixels of each channel of the
    /// `[N, C, ...]` tensor `t`, in Double, as a tensor of `shape`.
    static func channelSums(_ t: Tensor, shape: [Int]) throws -> Tensor {
        let (batch, channels) = (t.shape[0], t.shape[1])
        let plane = channels == 0 || batch == 0 ? 0 : t.count / (batch * channels)
        var sums = [Double](repeating: 0, count: channels)
        for n in 0..<batch {
            for ch in 0..<channels {
                let values = t.dataPointer + (n * channels + ch) * plane
                var sum = 0.0
                for p in 0..<plane { sum += Double(values[p]) }
                sums[ch] += sum
            }
        }
        return try Tensor(shape: shape, values: sums.map { Float($0) })
    }
}
