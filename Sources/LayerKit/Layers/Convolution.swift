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
/// CPU: `lk_conv2d_f32`: most convolutions run as a direct loop over
/// zero-padded input rows, a 1x1 kernel of stride 1 without pads as a matrix
/// product per group, and one with narrow output rows and many output
/// channels per group as im2col and a matrix product; large ones split
/// their output rows over threads. GPU: `conv2d.comp`, one invocation per
/// output texel (four output channels), with the weights kept on the device.
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
    /// The weights and bias laid out for `conv2d.comp` (see Convolution+GPU.swift).
    let deviceValues: (weights: [Float], bias: [Float])
    /// What `prepare` made on each context.
    let gpuState = PerContext<PreparedConvolution>()

    /// Multiply-adds per output element below which `evaluate` stays on one
    /// thread: waking helpers costs microseconds, which small layers lose.
    static let minimumWorkPerThread = 1 << 21

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
        deviceValues = Self.arrangedForDevice(weights: self.weights, bias: bias, group: group)
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

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        try evaluate(inputs: inputs, outputs: outputs, epilogue: nil, residual: nil)
    }

    /// `evaluate(inputs:outputs:)` with a fused epilogue applied to each
    /// chunk of output pixels as soon as the chunk is written (while it is
    /// in cache), on the chunk's thread; `residual` has the output's shape.
    func evaluate(inputs: [Tensor], outputs: [Tensor], epilogue: Epilogue?, residual: Tensor?) throws {
        let g = try checkedGeometry(inputShapes: inputs.map(\.shape), outputShapes: outputs.map(\.shape))
        var shape = lk_conv2d_shape(
            channels: inputChannels, height: g.height, width: g.width, out_channels: outputChannels,
            out_height: g.outHeight, out_width: g.outWidth, kernel_h: kernelHeight, kernel_w: kernelWidth,
            stride_h: strides[0], stride_w: strides[1], dilation_h: dilations[0], dilation_w: dilations[1],
            pad_top: g.padTop, pad_left: g.padLeft, group: group)
        let (input, output, weights, bias, channels) = (inputs[0], outputs[0], weights, bias, outputChannels)
        let pixels = g.outHeight * g.outWidth
        let work = outputs[0].count * weights.count / outputChannels
        // Whole output rows a chunk (the direct loop copies each chunk's input
        // rows and blocks whole rows), at least 64 pixels, two chunks a thread
        // for balance.
        let threads = min(threadCount, CPUThreads.current, max(1, work / Self.minimumWorkPerThread))
        let rowsPerChunk = max((g.outWidth + 63) / g.outWidth, (g.outHeight + 2 * threads - 1) / (2 * threads))
        let chunk = threads == 1 ? pixels : rowsPerChunk * g.outWidth
        let chunksPerImage = (pixels + chunk - 1) / chunk
        let failed = Atomic(false)
        withUnsafePointer(to: &shape) { shapePointer in
            let shape = SendableShape(pointer: shapePointer)
            forEachChunk(count: g.batch * chunksPerImage, chunkSize: 1, threadCount: threads) { range in
                for i in range {
                    let (n, first) = (i / chunksPerImage, i % chunksPerImage * chunk)
                    let status = lk_conv2d_f32(
                        shape.pointer, input.dataPointer + n * input.count / g.batch, weights.dataPointer,
                        bias?.dataPointer, output.dataPointer + n * output.count / g.batch,
                        first, min(chunk, pixels - first))
                    if status != 0 { failed.store(true, ordering: .relaxed) }
                    // The epilogue point: this chunk of every output channel is final.
                    // Chunks stay the convolution's own: capping them at 256 KiB of
                    // output so the epilogue finds them in L2 measured slower
                    // (light_resnet50, 1 thread, load 5-6: 102-134 ms fused and capped
                    // against 80-110 ms unfused), the kernels redoing per-call work.
                    epilogue?.apply(output: output.dataPointer + n * output.count / g.batch,
                                    residual: residual.map { UnsafePointer($0.dataPointer + n * output.count / g.batch) },
                                    channels: channels, pixels: pixels, segment: first..<min(first + chunk, pixels))
                }
            }
        }
        if failed.load(ordering: .relaxed) {
            throw LayerKitError.unsupported("Conv: out of memory for the im2col buffer")
        }
    }
}

/// The convolution geometry handed to worker threads, which only read it.
private struct SendableShape: @unchecked Sendable {
    let pointer: UnsafePointer<lk_conv2d_shape>
}
