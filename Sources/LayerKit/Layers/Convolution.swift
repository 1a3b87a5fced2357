import CKernels
import Foundation
import Synchronization

/// ONNX `Conv` in two dimensions: `[N, C, H, W]` to `[N, M, OH, OW]` with
/// weights `[M, C/group, kH, kW]`, an optional bias `[M]`, strides,
/// dilations, pads and groups; or in one: `[N, C, L]` to `[N, M, OL]` with
/// weights `[M, C/group, k]`, run as the 2-D convolution of the
/// `[N, C, L, 1]` image that tensor is by the rank rule (the kernel along
/// the height axis, a unit width), so it runs on the GPU as well.
///
/// CPU: a 3x3 stride-1 layer with 32 channels or more on a map of 8x8 or
/// more by Winograd (`Convolution+Winograd.swift`); otherwise
/// `lk_conv2d_f32_packed` on weights packed once at creation: most
/// convolutions run as a direct loop over zero-padded input rows, a 1x1
/// kernel as a matrix product per group (straight on the input at stride 1
/// without pads, on the gathered pixels otherwise; along the output
/// channels on 7x7 maps), one with narrow output
/// rows and many output channels per group as im2col and a matrix product,
/// one with a panel of output channels (32 on AVX-512) and 16 input
/// channels a group or more as the direct loop vectorized along the output
/// channels, a depthwise one (group == C == M) by its own kernel; one whose
/// taps mostly read padding (a large dilation on a small map) as
/// convolutions of the taps that read the input (`Convolution+ValidTaps.swift`);
/// large ones split their output channels and pixels over threads
/// (``WorkSplit``). GPU: `conv2d.comp`, each invocation a block of output
/// texels and slices chosen by the shape, with the weights arranged once for
/// it on the device.
public final class Convolution: Layer {
    /// "Conv".
    public var layerName: String { "Conv" }
    /// The weights, `[M, C/group, kH, kW]` (a copy of the ones given; a
    /// 1-D convolution's `[M, C/group, k]` as `[M, C/group, k, 1]`).
    public let weights: Tensor
    /// 1 for a 1-D convolution (`[N, C, L]` input), 2 for a 2-D one.
    public let spatialRank: Int
    /// The bias, `[M]`, if any (a copy).
    public let bias: Tensor?
    /// Strides along height and width (1-D: the stride, then 1).
    public let strides: [Int]
    /// Dilations along height and width (1-D: the dilation, then 1).
    public let dilations: [Int]
    /// The padding rule (ONNX `pads` / `auto_pad`; 1-D explicit pads
    /// `[begin, end]` are held as `[begin, 0, end, 0]`).
    public let padding: Padding
    /// The number of groups: input and output channels split into this many
    /// independent convolutions.
    public let group: Int
    /// The most threads `evaluate` uses (one per core by default; a run's
    /// `Backend.threads` caps it); work too
    /// small to gain from threads runs on the calling thread alone.
    public var threadCount = activeProcessorCount

    /// M.
    public var outputChannels: Int { weights.shape[0] }
    /// C: `group` times the weights' second extent.
    public var inputChannels: Int { group * weights.shape[1] }
    var kernelHeight: Int { weights.shape[2] }
    var kernelWidth: Int { weights.shape[3] }
    /// The weights packed once for the CPU kernels of this process's
    /// instruction set (`lk_conv2d_pack_weights`): re-packing them on every
    /// run and every thread's chunk cost resnet18's 512->512 3x3 layer on
    /// 7x7 maps 70% of its time (6.97 ms against 2.0 ms, one thread).
    let packedWeights: [Float]
    /// The instruction set `packedWeights` is laid out for.
    let packedISA: lk_isa
    /// The layout `packedWeights` has (`lk_conv2d_layout`: CHANNELS, or
    /// AUTO for the one every other path reads).
    let packedLayout: lk_conv_path
    /// The other layout, packed on first use by a run whose path reads it
    /// (only a forced path does: the automatic choice reads `packedLayout`).
    let otherPacking = Mutex<[Float]?>(nil)
    /// How the GPU form picks its kernel (tests force paths; see Convolution+GPU.swift).
    var gpuOptions = ConvolutionGPUOptions()
    /// What `prepare` made on each context.
    let gpuState = PerContext<PreparedConvolution>()
    /// The weights transformed for the Winograd path, made on first use (Convolution+Winograd.swift).
    let winogradState = WinogradState()
    /// The layer of the input gradient for the last input shape trained on (Training/Convolution+Gradients.swift).
    let inputGradientLayers = KeyedLayerCache<Layer>()
    /// For the last input size run: how it runs by rectangles of valid taps,
    /// or nil when it does not (Convolution+ValidTaps.swift).
    let validTapPlans = KeyedLayerCache<ValidTapPlan?>()

    /// Multiply-adds a thread must get for `evaluate` to use another: waking
    /// helpers costs microseconds, which small layers lose. 2^19 rather than
    /// 2^21: mobilenet_v2 at 2 threads 4.05 -> 3.77 ms (medians of 30,
    /// alternating binaries, load 1.0), resnet18 and squeezenet unchanged.
    static let minimumWorkPerThread = 1 << 19

    /// The checks every Conv layer (1-D/2-D here, 3-D in `Convolution3D`)
    /// makes of `group` and `bias` against weights `[M, C/group, ...]`:
    /// `group` >= 1 dividing M, and a bias (if any) of shape `[M]`.
    static func requireGroupAndBias(weights: Tensor, bias: Tensor?, group: Int) throws {
        guard group >= 1, weights.shape[0] % group == 0 else {
            throw LayerKitError.invalidParameter(
                "Conv: group must be >= 1 and divide the \(weights.shape[0]) output channels, got \(group)")
        }
        if let bias, bias.shape != [weights.shape[0]] {
            throw LayerKitError.invalidWeights(
                "Conv: bias must be [\(weights.shape[0])] (one per output channel), got \(Tensor.describe(bias.shape))")
        }
    }

    /// Makes the layer; throws `LayerKitError.invalidWeights` or
    /// `.invalidParameter` for weights, bias or attributes that do not fit.
    /// Weights of rank 3 make a 1-D convolution, whose strides and
    /// dilations are one value each (or the 2-D form `[v, 1]`) and whose
    /// explicit pads are `[begin, end]`.
    public init(weights: Tensor, bias: Tensor? = nil, strides: [Int] = [1, 1], dilations: [Int] = [1, 1],
                padding: Padding = .explicit([0, 0, 0, 0]), group: Int = 1) throws {
        guard (3...4).contains(weights.shape.count), weights.count > 0 else {
            throw LayerKitError.invalidWeights(
                "Conv: weights must be [M, C/group, kH, kW] (or [M, C/group, k] for 1-D) with no empty extent, got "
                + "\(Tensor.describe(weights.shape))")
        }
        let spatialRank = weights.shape.count - 2
        try Self.requireGroupAndBias(weights: weights, bias: bias, group: group)
        // A 1-D convolution is a 2-D one with a unit second axis.
        let planar = { (values: [Int]) in spatialRank == 1 && values.count == 1 ? values + [1] : values }
        let (strides, dilations) = (planar(strides), planar(dilations))
        for (name, values) in [("strides", strides), ("dilations", dilations)]
        where values.count != 2 || values.contains(where: { $0 < 1 }) || (spatialRank == 1 && values[1] != 1) {
            throw LayerKitError.invalidParameter("Conv: \(name) must be \(spatialRank) value(s) >= 1, got \(values)")
        }
        var padding = padding
        if case .explicit(let pads) = padding {
            let planarPads = spatialRank == 1 && pads.count == 2 ? [pads[0], 0, pads[1], 0] : pads
            guard planarPads.count == 4, !planarPads.contains(where: { $0 < 0 }),
                  spatialRank == 2 || (planarPads[1] == 0 && planarPads[3] == 0) else {
                throw LayerKitError.invalidParameter(spatialRank == 1
                    ? "Conv: pads must be two values >= 0 (begin, end), got \(pads)"
                    : "Conv: pads must be four values >= 0 (top, left, bottom, right), got \(pads)")
            }
            padding = .explicit(planarPads)
        }
        let shape = spatialRank == 1 ? weights.shape + [1] : weights.shape
        self.weights = try Tensor(shape: shape, values: weights.values)
        self.bias = try bias.map { try Tensor(shape: $0.shape, values: $0.values) }
        self.spatialRank = spatialRank
        (self.strides, self.dilations, self.padding, self.group) = (strides, dilations, padding, group)
        // The packing depends on the weights' geometry only (spatial extents
        // 1); a 1-D kernel lies along the width, as `kernelShape(for:)` runs it.
        let (kernelH, kernelW) = spatialRank == 1 ? (1, shape[2]) : (shape[2], shape[3])
        var packShape = lk_conv2d_shape(
            channels: group * shape[1], height: 1, width: 1, out_channels: shape[0], out_height: 1, out_width: 1,
            kernel_h: kernelH, kernel_w: kernelW, stride_h: 1, stride_w: 1, dilation_h: 1, dilation_w: 1,
            pad_top: 0, pad_left: 0, group: group)
        let isa = lk_kernels_isa()
        packedISA = isa
        packedLayout = lk_conv2d_layout(isa, &packShape)
        packedWeights = Self.pack(self.weights, shape: packShape, isa: isa, layout: packedLayout)
    }

    /// `weights` packed by `lk_conv2d_pack_weights` for `isa` and `layout`.
    static func pack(_ weights: Tensor, shape: lk_conv2d_shape, isa: lk_isa, layout: lk_conv_path) -> [Float] {
        var shape = shape
        return [Float](unsafeUninitializedCapacity: lk_conv2d_packed_size(isa, layout, &shape)) { buffer, count in
            _ = lk_conv2d_pack_weights(isa, layout, &shape, weights.dataPointer, buffer.baseAddress)
            count = buffer.count
        }
    }

    /// The packed weights `path` reads.
    func packed(for path: lk_conv_path, shape: lk_conv2d_shape) -> [Float] {
        let layout = path == LK_CONV_CHANNELS ? LK_CONV_CHANNELS : LK_CONV_AUTO
        if layout == packedLayout { return packedWeights }
        return otherPacking.withLock { stored in
            if let stored { return stored }
            let values = Self.pack(weights, shape: shape, isa: packedISA, layout: layout)
            stored = values
            return values
        }
    }

    /// The resolved geometry of a run: input extents, output extents, leading pads.
    struct Geometry {
        var batch, height, width, outHeight, outWidth, padTop, padLeft: Int
    }

    /// The geometry for an input shape; throws when it does not fit.
    func geometry(forInputShape shape: [Int]) throws -> Geometry {
        guard shape.count == spatialRank + 2 || (spatialRank == 1 && shape.count == 4 && shape[3] == 1) else {
            throw LayerKitError.shapeMismatch(
                "Conv: input must be \(spatialRank == 1 ? "[N, C, L]" : "[N, C, H, W]"), got \(Tensor.describe(shape))")
        }
        // 1-D: [N, C, L] is the [N, C, L, 1] image it is by the rank rule.
        let shape = shape.count == 3 ? shape + [1] : shape
        guard shape[1] == inputChannels else {
            throw LayerKitError.shapeMismatch(
                "Conv: input \(Tensor.describe(shape)) has \(shape[1]) channels; weights \(Tensor.describe(weights.shape)) "
                + "with group \(group) need \(inputChannels)")
        }
        let rows = try window(axis: 0, input: shape[2], kernel: kernelHeight)
        let columns = try window(axis: 1, input: shape[3], kernel: kernelWidth)
        // SAME with a kernel narrower than the stride may resolve to a negative
        // leading pad; the convolution then starts at the first input cell.
        return Geometry(batch: shape[0], height: shape[2], width: shape[3], outHeight: rows.output,
                        outWidth: columns.output, padTop: max(0, rows.begin), padLeft: max(0, columns.begin))
    }

    /// Spatial axis `axis` (0: height, 1: width) resolved by the padding rule.
    private func window(axis: Int, input: Int, kernel: Int) throws -> Padding.Axis {
        try padding.window(axis: axis, of: 2, input: input, kernel: kernel, stride: strides[axis],
                           dilation: dilations[axis], ceilMode: false, layer: "Conv")
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: "Conv")
        try LayerChecks.requireRank(inputShapes[0], in: spatialRank + 2...spatialRank + 2, layer: "Conv")
        let g = try geometry(forInputShape: inputShapes[0])
        return [spatialRank == 1 ? [g.batch, outputChannels, g.outHeight]
                                 : [g.batch, outputChannels, g.outHeight, g.outWidth]]
    }

    /// The checked geometry of a run with these tensors or images' shapes
    /// (a 1-D convolution's images are `[N, C, L, 1]`).
    func checkedGeometry(inputShapes: [[Int]], outputShapes given: [[Int]]) throws -> Geometry {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: "Conv")
        let g = try geometry(forInputShape: inputShapes[0])
        let image = [g.batch, outputChannels, g.outHeight, g.outWidth]
        let expected = inputShapes[0].count == 3 ? [Array(image[..<3])] : [image]
        guard given == expected else {
            throw LayerKitError.shapeMismatch(
                "Conv: outputs \(given.map(Tensor.describe)) given, \(expected.map(Tensor.describe)) expected")
        }
        return g
    }

    /// How `evaluate` splits a run into work items: each item is one image,
    /// a range of output channels and a range of output pixels, and every
    /// item finishes that region of the output.
    struct WorkSplit: Equatable {
        /// Output-channel ranges, each starting on a channel block of its
        /// group (`lk_conv2d_channel_block`), together covering [0, M).
        var channelRanges: [Range<Int>]
        /// Row tiles an image: tile t is output rows [t * rows / n, (t + 1) * rows / n).
        var rowTiles: Int
        /// The output rows and row width of an image.
        var rows, width: Int
        /// Threads to run the items on.
        var threads: Int

        /// The split of `batch` images of `pixels` output pixels (`rows`
        /// rows) and `outputChannels` channels in `group` groups, channel
        /// block `block`, `work` multiply-adds in all, over at most
        /// `threads` threads.
        ///
        /// Items over output-channel blocks as well as pixel rows, so that a
        /// 7x7 map with 512 channels (49 pixels: one row tile) still gives
        /// every thread work, about three items a thread (balance when one
        /// thread is slowed, without many repeated input copies: each
        /// channel range pads or gathers its pixels' inputs again). With 16
        /// threads on resnet18's last layer (64 blocks of 8 channels, one
        /// pixel tile): 48 items of 1 or 2 blocks, 3 a thread taken in turn;
        /// on 56x56 maps the rows split first (28 tiles of 2 rows, 2 channel
        /// ranges; on 2 threads 6 tiles of 9-10 rows). One thread: one item
        /// an image, nothing repeated.
        ///
        /// `channelsFirst`: split by channel blocks alone where there are
        /// enough, for paths that repeat no input copy per channel range (a
        /// depthwise kernel reads only its own channels' planes, a 1x1
        /// product the input in place). A row tile ends inside every output
        /// plane, so two threads write the cache line there (and the next
        /// layer's tiles read across it): MobileNetV2 on 2 threads, its 14x14
        /// depthwise layers took 0.063-0.078 ms with row tiles against
        /// 0.039-0.043 by channels, its 14x14 1x1 layers 0.100 against 0.067.
        static func make(batch: Int, outputChannels: Int, group: Int, block: Int, pixels: Int, rows: Int,
                         work: Int, threads: Int, minimumWork: Int = Convolution.minimumWorkPerThread,
                         channelsFirst: Bool = false) -> WorkSplit {
            let threads = max(1, min(threads, work / max(1, minimumWork)))
            let channelsPerGroup = outputChannels / group
            let blocksPerGroup = (channelsPerGroup + block - 1) / block
            let blocks = group * blocksPerGroup
            guard threads > 1 else {
                return WorkSplit(channelRanges: [0..<outputChannels], rowTiles: 1, rows: rows, width: pixels / rows,
                                 threads: 1)
            }
            let perImage = (3 * threads + batch - 1) / batch
            // Pixel tiles of whole rows, at least 64 pixels (the direct loop
            // copies each tile's input rows and blocks whole rows).
            let width = pixels / rows
            let minimumRows = max(1, (64 + width - 1) / width)
            let rowTiles = channelsFirst && blocks >= perImage ? 1 : max(1, min(perImage, rows / minimumRows))
            let channelTiles = max(1, min(blocks, (perImage + rowTiles - 1) / rowTiles))
            // Channel tiles of near-equal block counts; a block's channels:
            // group g's [g * mg + b * block, min(..., (g + 1) * mg)).
            func start(_ b: Int) -> Int {
                b == blocks ? outputChannels
                    : b / blocksPerGroup * channelsPerGroup + b % blocksPerGroup * block
            }
            let ranges = (0..<channelTiles).map { t in
                start(t * blocks / channelTiles)..<start((t + 1) * blocks / channelTiles)
            }
            return WorkSplit(channelRanges: ranges, rowTiles: rowTiles, rows: rows, width: width, threads: threads)
        }

        /// The output pixels of row tile `t`.
        func pixels(ofTile t: Int) -> Range<Int> {
            t * rows / rowTiles * width..<(t + 1) * rows / rowTiles * width
        }

        /// The most pixels of any tile.
        var largestTile: Int { (rows + rowTiles - 1) / rowTiles * width }
    }

    /// Forces a path of `lk_conv2d_f32_packed` (tests); nil: the automatic choice.
    var forcedPath: lk_conv_path?
    /// Multiply-adds a thread must get (tests lower it to split small layers).
    var minimumWorkPerThread = Convolution.minimumWorkPerThread

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        try evaluate(inputs: inputs, outputs: outputs, epilogue: nil, residual: nil)
    }

    /// `evaluate(inputs:outputs:)` with a fused epilogue applied to each
    /// chunk of output pixels as soon as the chunk is written (while it is
    /// in cache), on the chunk's thread; `residual` has the output's shape.
    func evaluate(inputs: [Tensor], outputs: [Tensor], epilogue: Epilogue?, residual: Tensor?) throws {
        let g = try checkedGeometry(inputShapes: inputs.map(\.shape), outputShapes: outputs.map(\.shape))
        // Taps mostly over padding (large dilations): only the others (Convolution+ValidTaps.swift).
        if forcedPath == nil, [.automatic, .direct].contains(Self.forcedCPUAlgorithm),
           try evaluateValidTaps(input: inputs[0], output: outputs[0], geometry: g, epilogue: epilogue,
                                 residual: residual) {
            return
        }
        // 3x3 stride 1: Winograd where it pays (Convolution+Winograd.swift).
        if try evaluateWinograd(inputs: inputs, outputs: outputs, geometry: g, epilogue: epilogue, residual: residual) {
            return
        }
        var shape = kernelShape(for: g)
        let (input, output, bias, isa) = (inputs[0], outputs[0], bias, packedISA)
        let pixels = g.outHeight * g.outWidth
        guard pixels > 0, g.batch > 0 else { return }
        let path = forcedPath ?? lk_conv2d_path(isa, &shape)
        // Depthwise layers run at about a third of the multiply-adds a second
        // of the others (38 against 110 G/s, one thread): weigh them so.
        let work = output.count * weights.count / outputChannels * (path == LK_CONV_DEPTHWISE ? 3 : 1)
        let split = WorkSplit.make(
            batch: g.batch, outputChannels: outputChannels, group: group,
            block: lk_conv2d_channel_block(isa, path, &shape), pixels: pixels, rows: Int(shape.out_height), work: work,
            threads: min(threadCount, CPUThreads.current), minimumWork: minimumWorkPerThread,
            channelsFirst: path == LK_CONV_DEPTHWISE || path == LK_CONV_POINTWISE)
        let itemsPerImage = split.rowTiles * split.channelRanges.count
        let items = g.batch * itemsPerImage
        let workFloats = lk_conv2d_work_size(isa, path, &shape, split.largestTile)
        let (inputStride, outputStride) = (input.count / g.batch, output.count / g.batch)
        let failed = Atomic(false)
        packed(for: path, shape: shape).withUnsafeBufferPointer { packedBuffer in
            let packed = SendableFloats(pointer: packedBuffer.baseAddress)
            withUnsafePointer(to: &shape) { shapePointer in
                let shape = SendableShape(pointer: shapePointer)
                // One worker a thread, each owning a run of items in pixel-tile
                // order (the same rows of every layer); its work buffer is
                // allocated once for the call, never per item.
                let workers = min(split.threads, items)
                let runs = WorkRuns(count: items, workers: workers)
                let channelTiles = split.channelRanges.count
                forEachChunk(count: workers, chunkSize: 1, threadCount: workers) { worker in
                    let work = UnsafeMutablePointer<Float>.allocate(capacity: max(1, workFloats))
                    defer { work.deallocate() }
                    while let i = runs.next(for: worker.lowerBound) {
                        let (n, r) = i.quotientAndRemainder(dividingBy: itemsPerImage)
                        let channels = split.channelRanges[r % channelTiles]
                        let tile = split.pixels(ofTile: r / channelTiles)
                        let (first, count) = (tile.lowerBound, tile.count)
                        let status = lk_conv2d_f32_packed(
                            isa, path, shape.pointer, input.dataPointer + n * inputStride, packed.pointer,
                            bias?.dataPointer, output.dataPointer + n * outputStride,
                            channels.lowerBound, channels.upperBound, first, count, work)
                        if status != 0 { failed.store(true, ordering: .relaxed) }
                        // The epilogue point: batch item n, output channels
                        // `channels`, output pixels [first, first + count) of
                        // each are final here (still in L2) and no other item
                        // writes them.
                        epilogue?.apply(output: output.dataPointer + n * outputStride,
                                        residual: residual.map { UnsafePointer($0.dataPointer + n * outputStride) },
                                        channels: channels, pixels: pixels, segment: first..<first + count)
                    }
                }
            }
        }
        if failed.load(ordering: .relaxed) {
            throw LayerKitError.unsupported("Conv: the CPU kernel rejected \(Tensor.describe(input.shape)) (path \(path.rawValue))")
        }
    }
}

/// The packed weights handed to worker threads, which only read them.
private struct SendableFloats: @unchecked Sendable {
    let pointer: UnsafePointer<Float>?
}

extension Convolution {
    /// The C kernels' geometry of a run of geometry `g`. A 1-D convolution's
    /// `[N, C, L, 1]` runs as the `[N, C, 1, L]` it is in memory too: the
    /// kernels vectorize along a row and copy and pad a tile's rows, so L
    /// rows of one pixel cost 3x one row of L (Whisper's 512 -> 512 stem
    /// convolution on 3,000 steps: 71 ms against 22, one thread).
    func kernelShape(for g: Geometry) -> lk_conv2d_shape {
        if spatialRank == 1 {
            return lk_conv2d_shape(
                channels: inputChannels, height: 1, width: g.height, out_channels: outputChannels,
                out_height: 1, out_width: g.outHeight, kernel_h: 1, kernel_w: kernelHeight,
                stride_h: 1, stride_w: strides[0], dilation_h: 1, dilation_w: dilations[0],
                pad_top: 0, pad_left: g.padTop, group: group)
        }
        return lk_conv2d_shape(
            channels: inputChannels, height: g.height, width: g.width, out_channels: outputChannels,
            out_height: g.outHeight, out_width: g.outWidth, kernel_h: kernelHeight, kernel_w: kernelWidth,
            stride_h: strides[0], stride_w: strides[1], dilation_h: dilations[0], dilation_w: dilations[1],
            pad_top: g.padTop, pad_left: g.padLeft, group: group)
    }
}

/// The convolution geometry handed to worker threads, which only read it
/// (the direct and the Winograd paths).
struct SendableShape: @unchecked Sendable {
    let pointer: UnsafePointer<lk_conv2d_shape>
}
