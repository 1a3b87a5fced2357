import CKernels

/// ONNX 1-D and 2-D pooling: `MaxPool`, `AveragePool`, `GlobalMaxPool` and
/// `GlobalAveragePool` over NCHW tensors.
///
/// Windowed pools take a rank-4 input, or a rank-3 `[N, C, L]` one for a
/// 1-D pool (a one-value kernel): that runs as the 2-D pool of the
/// `[N, C, L, 1]` image the tensor is by the rank rule, with a unit window
/// along the width, on the CPU and the GPU alike. (3-D pools and MaxPool's
/// Indices output are `GeneralPooling`'s.) Window geometry (pads, auto_pad,
/// ceil mode, dilation) follows onnxruntime (see `Padding.window`): an
/// average excludes pad cells from its divisor unless `countIncludePad`,
/// which counts the cells inside the padded extent (with `ceilMode`, not the
/// cells of a window past that extent). A max window that covers no input
/// cell gives -inf. Global pools reduce every axis after the channel axis
/// to 1 (input rank 3 or more; on the GPU rank 3 or 4).
public final class Pooling: Layer, Sendable {
    /// What a pool computes.
    public enum Kind: Sendable, Equatable {
        /// The largest value of each window (MaxPool).
        case max
        /// The mean of each window (AveragePool).
        case average(countIncludePad: Bool)
        /// The mean of each channel plane (GlobalAveragePool).
        case globalAverage
        /// The largest value of each channel plane (GlobalMaxPool).
        case globalMax
    }

    /// The kind of pool.
    public let kind: Kind
    /// Window extent [height, width] (1-D: [length, 1]); empty for global pools.
    public let kernel: [Int]
    /// Window step [y, x] (1-D: [step, 1]).
    public let strides: [Int]
    /// The padding (1-D explicit pads `[begin, end]` are held as `[begin, 0, end, 0]`).
    public let padding: Padding
    /// Spacing between window cells [y, x] (1-D: [dilation, 1]).
    public let dilations: [Int]
    /// The spatial axes of a windowed pool's input: 1 or 2 (0 for global pools).
    public let spatialRank: Int
    /// Whether output extents round up (ONNX `ceil_mode`).
    public let ceilMode: Bool
    /// The pipeline `prepare` made on each context.
    private let gpuKernel = PerContext<GPUKernel<PoolConstants>>()

    /// A windowed pool (`kind` `.max` or `.average`) with a 2-element
    /// `kernel` (or a 1-element one: a 1-D pool, whose strides and
    /// dilations are then one value each and explicit pads `[begin, end]`),
    /// or a global pool (`kernel` empty; the window parameters are then
    /// unused). Throws for non-positive or miscounted values.
    public init(kind: Kind, kernel: [Int] = [], strides: [Int] = [1, 1], dilations: [Int] = [1, 1],
                padding: Padding = .explicit([0, 0, 0, 0]), ceilMode: Bool = false) throws {
        let name = Pooling.name(of: kind)
        var (strides, dilations, padding) = (strides, dilations, padding)
        if Pooling.isGlobal(kind) {
            guard kernel.isEmpty else {
                throw LayerKitError.invalidParameter("\(name) takes no kernel, got \(kernel)")
            }
            spatialRank = 0
        } else {
            spatialRank = kernel.count
            guard (1...2).contains(spatialRank) else {
                throw LayerKitError.invalidParameter("\(name): kernel \(kernel) must be 1 or 2 values (1-D or 2-D pooling)")
            }
            // A 1-D pool is a 2-D one with a unit window along the width.
            if spatialRank == 1 {
                strides = strides.count == 1 ? strides + [1] : strides
                dilations = dilations.count == 1 ? dilations + [1] : dilations
                if case .explicit(let pads) = padding, pads.count == 2 { padding = .explicit([pads[0], 0, pads[1], 0]) }
            }
            for (what, values) in [("strides", strides), ("dilations", dilations)]
            where values.count != 2 || values.contains(where: { $0 <= 0 }) || (spatialRank == 1 && values[1] != 1) {
                throw LayerKitError.invalidParameter("\(name): \(what) \(values) must be \(spatialRank) positive value(s)")
            }
            if kernel.contains(where: { $0 <= 0 }) {
                throw LayerKitError.invalidParameter("\(name): kernel \(kernel) must be positive values")
            }
            if case .explicit(let pads) = padding,
               pads.count != 4 || pads.contains(where: { $0 < 0 }) || (spatialRank == 1 && (pads[1] != 0 || pads[3] != 0)) {
                throw LayerKitError.invalidParameter(spatialRank == 1
                    ? "\(name): pads \(pads) must be 2 values >= 0 [begin, end]"
                    : "\(name): pads \(pads) must be 4 values >= 0 [top, left, bottom, right]")
            }
        }
        self.kind = kind
        self.kernel = spatialRank == 1 ? kernel + [1] : kernel
        self.strides = strides
        self.padding = padding
        self.dilations = dilations
        self.ceilMode = ceilMode
    }

    /// "MaxPool", "AveragePool", "GlobalAveragePool" or "GlobalMaxPool".
    public var layerName: String { Pooling.name(of: kind) }

    /// [N, C, outH, outW] (1-D: [N, C, outL]) for windowed pools, the input
    /// shape with every axis after C set to 1 for global ones.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        if Pooling.isGlobal(kind) {
            try LayerChecks.requireRank(shape, in: 3...Int.max, layer: layerName)
            return [Array(shape[..<2]) + Array(repeating: 1, count: shape.count - 2)]
        }
        try LayerChecks.requireRank(shape, in: spatialRank + 2...spatialRank + 2, layer: layerName)
        let (rows, columns) = try window(shape)
        return [spatialRank == 1 ? [shape[0], shape[1], rows.output] : [shape[0], shape[1], rows.output, columns.output]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        let input = inputs[0]
        let planes = shape[0] * shape[1]
        let inPlane = LayerChecks.product(input.shape[2...])
        let output = outputs[0]
        let chunk = max(1, defaultChunkSize / max(inPlane, 1))
        if Pooling.isGlobal(kind) {
            let max: Int32 = kind == .globalMax ? 1 : 0
            forEachChunk(count: planes, chunkSize: chunk, threadCount: CPUThreads.current) { range in
                lk_global_pool_f32(max, input.dataPointer + range.lowerBound * inPlane,
                                   output.dataPointer + range.lowerBound, inPlane, range.count)
            }
            return
        }
        let params = try kernelParameters(input.shape)
        let outPlane = LayerChecks.product(shape[2...])
        forEachChunk(count: planes, chunkSize: chunk, threadCount: CPUThreads.current) { range in
            var p = params
            // On the stack for any real window: no allocation per call.
            withUnsafeTemporaryAllocation(of: Float.self, capacity: lk_pool2d_scratch_floats(&p)) { scratch in
                lk_pool2d_f32(&p, input.dataPointer + range.lowerBound * inPlane,
                              output.dataPointer + range.lowerBound * outPlane, range.count, scratch.baseAddress)
            }
        }
    }

    public var hasGPUImplementation: Bool { true }

    /// Creates the pipeline of this pool's kind on `context`, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        _ = try kernel(on: context, kernelParameters(inputShapes[0]))
    }

    /// `pool.comp` for `p.kind` (fixed by the layer's kind, whatever the shape).
    private func kernel(on context: GPUContext, _ p: lk_pool2d_params) throws -> GPUKernel<PoolConstants> {
        try gpuKernel.value(on: context) {
            try BuiltInShaders.pool.kernel(on: context, defines: [("LK_POOL_KIND", "\(p.kind.rawValue)")])
        }
    }

    /// `Shaders/pool.comp`, one invocation per output texel; a global pool
    /// is one window over the whole input plane.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1 else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image and 1 output image")
        }
        let (input, output) = (inputs[0], outputs[0])
        let p = try kernelParameters(input.shape)
        guard output.shape == [input.batch, input.featureChannels, p.out_h, p.out_w] else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): output image \(Tensor.describe(output.shape)) does not fit input \(Tensor.describe(input.shape))")
        }
        let constants = PoolConstants(
            shape: output.shapeConstants, inputWidth: Int32(p.in_w), inputHeight: Int32(p.in_h),
            kernelWidth: Int32(p.kernel_w), kernelHeight: Int32(p.kernel_h),
            strideX: Int32(p.stride_w), strideY: Int32(p.stride_h),
            dilationX: Int32(p.dilation_w), dilationY: Int32(p.dilation_h),
            padLeft: Int32(p.pad_left), padTop: Int32(p.pad_top), padRight: Int32(p.pad_right),
            padBottom: Int32(p.pad_bottom))
        try commandBuffer.dispatch(kernel(on: commandBuffer.context, p), images: [input, output],
                                   constants: constants, threads: output.threads)
    }

    /// The window geometry of a rank-4 input (or image; 1-D: a rank-3 one,
    /// read as [N, C, L, 1]): rows, then columns.
    private func window(_ shape: [Int]) throws -> (Padding.Axis, Padding.Axis) {
        try LayerChecks.requireRank(shape, in: (spatialRank == 1 ? 3 : 4)...4, layer: layerName)
        let shape = shape.count == 3 ? shape + [1] : shape
        let rows = try padding.window(axis: 0, of: 2, input: shape[2], kernel: kernel[0], stride: strides[0],
                                      dilation: dilations[0], ceilMode: ceilMode, layer: layerName)
        let columns = try padding.window(axis: 1, of: 2, input: shape[3], kernel: kernel[1], stride: strides[1],
                                         dilation: dilations[1], ceilMode: ceilMode, layer: layerName)
        return (rows, columns)
    }

    /// The C kernel's description of the pool over an NCHW input shape
    /// (a global pool as one window over the whole plane).
    func kernelParameters(_ shape: [Int]) throws -> lk_pool2d_params {
        let image = try Tensor.nchwShape(shape)
        let (h, w) = (image[2], image[3])
        switch kind {
        case .globalAverage, .globalMax:
            return lk_pool2d_params(in_h: h, in_w: w, out_h: 1, out_w: 1, kernel_h: h, kernel_w: w,
                                    stride_h: 1, stride_w: 1, dilation_h: 1, dilation_w: 1,
                                    pad_top: 0, pad_left: 0, pad_bottom: 0, pad_right: 0,
                                    kind: kind == .globalMax ? LK_POOL_MAX : LK_POOL_AVERAGE)
        case .max, .average:
            let (rows, columns) = try window(shape)
            let poolKind = switch kind {
            case .average(countIncludePad: true): LK_POOL_AVERAGE_INCLUDE_PAD
            case .average: LK_POOL_AVERAGE
            default: LK_POOL_MAX
            }
            return lk_pool2d_params(in_h: h, in_w: w, out_h: rows.output, out_w: columns.output,
                                    kernel_h: kernel[0], kernel_w: kernel[1], stride_h: strides[0], stride_w: strides[1],
                                    dilation_h: dilations[0], dilation_w: dilations[1],
                                    pad_top: rows.begin, pad_left: columns.begin, pad_bottom: rows.end,
                                    pad_right: columns.end, kind: poolKind)
        }
    }

    private static func isGlobal(_ kind: Kind) -> Bool { kind == .globalAverage || kind == .globalMax }

    private static func name(of kind: Kind) -> String {
        switch kind {
        case .max: "MaxPool"
        case .average: "AveragePool"
        case .globalAverage: "GlobalAveragePool"
        case .globalMax: "GlobalMaxPool"
        }
    }
}
