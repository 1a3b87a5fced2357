import CKernels
import Synchronization

/// Convolutions whose taps mostly read padding, run on the CPU as smaller
/// convolutions of only the taps that read the input.
///
/// A dilated kernel on a small map reads zeros for many of its taps:
/// DeepLabV3's ASPP runs 3x3 kernels of dilation 12, 24 and 36 on a 33x33
/// map, where only 57%, 26% and 11% of the taps land inside the input. The
/// padded loops multiply every zero, and the padded rows they copy grow with
/// the dilation (the dilation-36 layer took twice the dilation-12 one's
/// time, 128 against 63 ms, one thread).
///
/// Along each spatial axis the output splits into bands whose taps read the
/// input over one contiguous tap range (`TapBand`); a row band and a column
/// band make a rectangle of the output that is exactly the convolution,
/// without pads, of that sub-kernel over the input cells its taps read.
/// Each rectangle runs as such a `Convolution` (one per sub-kernel, made
/// on the first run of an input size and kept) on a copy of those cells,
/// and is copied into place; on several threads, a rectangle a thread.
/// An output with no tap inside the input is its bias.
///
/// Each output is then bias plus its in-input taps in (c, ky, kx) order:
/// the padded loop's sum without its `w * 0` terms, the same value except
/// for the sign of an exact zero and for infinite or NaN weights over the
/// padding (which the padded loop turns into NaN).
extension Convolution {
    /// A run of outputs along one axis whose taps inside the input are the
    /// same range.
    struct TapBand: Equatable {
        var outputs: Range<Int>
        var taps: Range<Int>
    }

    /// The bands of `outputs` outputs along an axis of `input` cells for a
    /// kernel of `kernel` taps, `stride`, `dilation` and leading pad `pad`.
    static func tapBands(outputs: Int, input: Int, kernel: Int, stride: Int, dilation: Int, pad: Int) -> [TapBand] {
        var bands: [TapBand] = []
        for o in 0..<outputs {
            let origin = o * stride - pad
            // Taps k with 0 <= origin + k * dilation < input.
            let lo = min(kernel, origin >= 0 ? 0 : (-origin + dilation - 1) / dilation)
            let hi = max(lo, min(kernel, origin >= input ? 0 : (input - 1 - origin) / dilation + 1))
            if let last = bands.last, last.taps == lo..<hi, last.outputs.upperBound == o {
                bands[bands.count - 1].outputs = last.outputs.lowerBound..<o + 1
            } else {
                bands.append(TapBand(outputs: o..<o + 1, taps: lo..<hi))
            }
        }
        return bands
    }

    /// The most rectangles a layer splits into: each is a convolution call
    /// with its own copies. ConvNeXt's 7x7 depthwise kernels on 7x7 maps
    /// (57% of taps inside) would be 49 one-pixel rectangles, 2.2x slower.
    static let maxValidTapRectangles = 16

    /// The row and column bands of `shape` when running them apart pays: at
    /// most two thirds of the padded loop's multiply-adds read the input
    /// (below that, more rectangles and copies cost more than the zeros),
    /// in at most `maxValidTapRectangles` rectangles.
    static func validTapBands(_ shape: lk_conv2d_shape) -> (rows: [TapBand], columns: [TapBand])? {
        let s = shape
        let rows = tapBands(outputs: Int(s.out_height), input: Int(s.height), kernel: Int(s.kernel_h),
                            stride: Int(s.stride_h), dilation: Int(s.dilation_h), pad: Int(s.pad_top))
        let columns = tapBands(outputs: Int(s.out_width), input: Int(s.width), kernel: Int(s.kernel_w),
                               stride: Int(s.stride_w), dilation: Int(s.dilation_w), pad: Int(s.pad_left))
        let valid = { (bands: [TapBand]) in bands.reduce(0) { $0 + $1.outputs.count * $1.taps.count } }
        let all = Int(s.out_height) * Int(s.kernel_h) * Int(s.out_width) * Int(s.kernel_w)
        guard all > 0, 3 * valid(rows) * valid(columns) <= 2 * all,
              rows.count * columns.count <= maxValidTapRectangles else { return nil }
        return (rows, columns)
    }

    /// Runs the layer by rectangles of valid taps when `validTapBands` says
    /// it pays; false (nothing done) otherwise. The plan (bands, sub-kernel
    /// layers, the rectangles in order) is made on the first run of an input
    /// size and kept, so a layer it does not pay for costs a cache lookup a run.
    func evaluateValidTaps(input: Tensor, output: Tensor, geometry g: Geometry, epilogue: Epilogue?,
                           residual: Tensor?) throws -> Bool {
        let s = kernelShape(for: g)
        guard let plan = try validTapPlans.layer(for: [Int(s.height), Int(s.width)], make: { try validTapPlan(s) })
        else { return false }
        let (outChannels, outWidth) = (outputChannels, Int(s.out_width))
        let pixels = Int(s.out_height) * outWidth
        for (rows, columns) in plan.biasOnly {
            fillBias(output, batch: g.batch, rows: rows.outputs, columns: columns.outputs, width: outWidth)
        }
        let rectangles = plan.rectangles
        let threads = min(threadCount, CPUThreads.current)
        if rectangles.count == 1 || threads == 1 {
            // One rectangle (a dilation past the map) splits over the threads itself.
            for rectangle in rectangles { try rectangle.run(input: input, output: output, batch: g.batch) }
        } else {
            // A rectangle a thread, each on that thread alone (a nested
            // forEachChunk runs on its caller): small rectangles split
            // poorly (ASPP's dilation-24 layer: 1.15x on 2 threads).
            let failure = Mutex<Error?>(nil)
            forEachChunk(count: rectangles.count, chunkSize: 1, threadCount: threads) { range in
                for i in range {
                    do { try rectangles[i].run(input: input, output: output, batch: g.batch) } catch {
                        failure.withLock { $0 = $0 ?? error }
                    }
                }
            }
            if let error = failure.withLock({ $0 }) { throw error }
        }
        guard let epilogue else { return true }
        // The epilogue over each image's planes, channel ranges on the layer's threads.
        let imageFloats = outChannels * pixels
        for n in 0..<g.batch {
            forEachChunk(count: outChannels, chunkSize: max(1, defaultChunkSize / max(1, pixels)),
                         threadCount: threads) { channels in
                epilogue.apply(output: output.dataPointer + n * imageFloats,
                               residual: residual.map { UnsafePointer($0.dataPointer + n * imageFloats) },
                               channels: channels, pixels: pixels, segment: 0..<pixels)
            }
        }
        return true
    }

    /// The plan for the C kernels' geometry `s`, nil when `validTapBands`
    /// says the padded loop is the better: one sub-kernel layer per distinct
    /// pair of tap ranges, the rectangles largest first (threads pull them in
    /// turn), and those with no tap inside the input (their bias).
    private func validTapPlan(_ s: lk_conv2d_shape) throws -> ValidTapPlan? {
        guard let (rows, columns) = Self.validTapBands(s) else { return nil }
        var layers: [[Int]: Convolution] = [:]
        var rectangles: [ValidTapRectangle] = [], biasOnly: [(rows: TapBand, columns: TapBand)] = []
        for r in rows {
            for c in columns {
                guard !r.taps.isEmpty, !c.taps.isEmpty else { biasOnly.append((r, c)); continue }
                let key = [r.taps.lowerBound, r.taps.upperBound, c.taps.lowerBound, c.taps.upperBound]
                let layer = try layers[key] ?? validTapLayer(rows: r.taps, columns: c.taps, shape: s)
                layers[key] = layer
                rectangles.append(ValidTapRectangle(layer: layer, rows: r, columns: c, shape: s))
            }
        }
        return ValidTapPlan(rectangles: rectangles.sorted { $0.work > $1.work }, biasOnly: biasOnly)
    }

    /// The convolution of taps `rows` x `columns` of the kernel (in the C
    /// kernels' geometry `shape`), same strides, dilations and groups, no pads.
    private func validTapLayer(rows: Range<Int>, columns: Range<Int>, shape s: lk_conv2d_shape) throws -> Convolution {
        let (kh, kw, m, cg) = (Int(s.kernel_h), Int(s.kernel_w), outputChannels, inputChannels / group)
        // The weights in the kernels' geometry are [M, C/group, kh, kw] in
        // memory for 2-D and 1-D alike (a 1-D [M, C/group, k, 1] is [.., 1, k]).
        var values: [Float] = []
        values.reserveCapacity(m * cg * rows.count * columns.count)
        let w = weights.elements
        for filter in 0..<m * cg {
            for ky in rows { for kx in columns { values.append(w[(filter * kh + ky) * kw + kx]) } }
        }
        let layer = try Convolution(
            weights: Tensor(shape: [m, cg, rows.count, columns.count], values: values), bias: bias,
            strides: [Int(s.stride_h), Int(s.stride_w)], dilations: [Int(s.dilation_h), Int(s.dilation_w)],
            padding: .explicit([0, 0, 0, 0]), group: group)
        layer.threadCount = threadCount
        layer.minimumWorkPerThread = minimumWorkPerThread
        return layer
    }

    /// Output rectangle `rows` x `columns` of every plane set to its channel's bias (0 without one).
    private func fillBias(_ output: Tensor, batch: Int, rows: Range<Int>, columns: Range<Int>, width: Int) {
        let pixels = output.count / max(1, batch * outputChannels)
        for plane in 0..<batch * outputChannels {
            let value = bias?[plane % outputChannels] ?? 0
            for y in rows {
                (output.dataPointer + plane * pixels + y * width + columns.lowerBound).update(repeating: value,
                                                                                               count: columns.count)
            }
        }
    }
}

/// How a convolution runs one input size by rectangles of valid taps.
struct ValidTapPlan {
    /// The rectangles with taps inside the input, largest first.
    let rectangles: [ValidTapRectangle]
    /// The rectangles with none: their bias.
    let biasOnly: [(rows: Convolution.TapBand, columns: Convolution.TapBand)]
}

/// One rectangle of the output and the convolution of its valid taps.
struct ValidTapRectangle: @unchecked Sendable {
    /// Only read while rectangles run (`evaluate` keeps no state), so
    /// threads share it.
    let layer: Convolution
    let rows, columns: Convolution.TapBand
    let shape: lk_conv2d_shape

    /// Multiply-adds a filter: pixels times taps.
    var work: Int { rows.outputs.count * columns.outputs.count * rows.taps.count * columns.taps.count }

    /// Computes the rectangle of `batch` images into `output` from the input
    /// cells its taps read (copied out unless they are the whole input).
    func run(input: Tensor, output: Tensor, batch: Int) throws {
        let s = shape
        let (channels, outChannels) = (Int(s.channels), Int(s.out_channels))
        let (height, width, outHeight, outWidth) = (Int(s.height), Int(s.width), Int(s.out_height), Int(s.out_width))
        let top = rows.outputs.lowerBound * Int(s.stride_h) + rows.taps.lowerBound * Int(s.dilation_h) - Int(s.pad_top)
        let left = columns.outputs.lowerBound * Int(s.stride_w) + columns.taps.lowerBound * Int(s.dilation_w)
            - Int(s.pad_left)
        let cropHeight = (rows.outputs.count - 1) * Int(s.stride_h) + (rows.taps.count - 1) * Int(s.dilation_h) + 1
        let cropWidth = (columns.outputs.count - 1) * Int(s.stride_w) + (columns.taps.count - 1) * Int(s.dilation_w) + 1
        let cropShape = [batch, channels, cropHeight, cropWidth]
        let crop: Tensor
        if top == 0, left == 0, cropHeight == height, cropWidth == width {
            crop = try Tensor(viewing: input.dataPointer, shape: cropShape, owner: input)
        } else {
            crop = try Tensor(shape: cropShape)
            copyWindow(from: input.dataPointer, planes: batch * channels, planeWidth: width, planeSize: height * width,
                       origin: (top, left), to: crop.dataPointer, size: (cropHeight, cropWidth))
        }
        let partShape = [batch, outChannels, rows.outputs.count, columns.outputs.count]
        if rows.outputs.count == outHeight, columns.outputs.count == outWidth {
            let whole = try Tensor(viewing: output.dataPointer, shape: partShape, owner: output)
            try layer.evaluate(inputs: [crop], outputs: [whole])
            return
        }
        let part = try Tensor(shape: partShape)
        try layer.evaluate(inputs: [crop], outputs: [part])
        // Back into place: the rectangle's rows of every output plane.
        let (pixels, n) = (outHeight * outWidth, columns.outputs.count)
        for plane in 0..<batch * outChannels {
            for (i, y) in rows.outputs.enumerated() {
                (output.dataPointer + plane * pixels + y * outWidth + columns.outputs.lowerBound)
                    .update(from: part.dataPointer + (plane * rows.outputs.count + i) * n, count: n)
            }
        }
    }
}

/// Copies the `size` window at `origin` of each of `planes` planes
/// (`planeSize` floats apart, rows `planeWidth` long) into `destination`,
/// windows back to back.
private func copyWindow(from source: UnsafePointer<Float>, planes: Int, planeWidth: Int, planeSize: Int,
                        origin: (row: Int, column: Int), to destination: UnsafeMutablePointer<Float>,
                        size: (rows: Int, columns: Int)) {
    for plane in 0..<planes {
        for row in 0..<size.rows {
            (destination + (plane * size.rows + row) * size.columns)
                .update(from: source + plane * planeSize + (origin.row + row) * planeWidth + origin.column,
                        count: size.columns)
        }
    }
}
