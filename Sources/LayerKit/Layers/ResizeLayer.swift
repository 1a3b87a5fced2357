import Foundation

/// ONNX Resize (and Upsample): each axis resized from its input extent to
/// the output's, each output index mapped back to an input coordinate by a
/// coordinate transformation and read by nearest, linear or cubic
/// interpolation. N-linear and n-cubic are separable, so the CPU resizes
/// one axis at a time (any rank); the GPU resizes the W and H of a tensor of
/// rank 4 at most, the batch and channel axes unchanged. Both read the same
/// per-axis tables of input indices and weights, made here in Float32 with
/// onnxruntime's formulas.
public final class ResizeLayer: Layer, ShapeLimitedGPULayer, Sendable {
    public enum Mode: String, Sendable, CaseIterable { case nearest, linear, cubic }

    /// How an output index maps to an input coordinate (ONNX's names).
    public enum CoordinateMode: String, Sendable, CaseIterable {
        case halfPixel = "half_pixel"
        case halfPixelSymmetric = "half_pixel_symmetric"
        case pytorchHalfPixel = "pytorch_half_pixel"
        case alignCorners = "align_corners"
        case asymmetric
        case tfHalfPixelForNN = "tf_half_pixel_for_nn"
        case tfCropAndResize = "tf_crop_and_resize"
    }

    /// How `nearest` rounds a coordinate to an index; `simple` is
    /// Upsample's and Resize-10's (floor when enlarging, ceil when shrinking).
    public enum NearestMode: String, Sendable, CaseIterable {
        case roundPreferFloor = "round_prefer_floor"
        case roundPreferCeil = "round_prefer_ceil"
        case floor, ceil, simple
    }

    public let mode: Mode
    public let coordinateMode: CoordinateMode
    public let nearestMode: NearestMode
    /// The output shape, resolved by the converter for the input's.
    public let outputShape: [Int]
    /// Per axis, the scale the coordinate transformation divides by.
    public let scales: [Float]
    /// `tf_crop_and_resize`'s region: per axis its start, then per axis its end (fractions of the extent).
    public let roi: [Float]
    public let cubicCoefficient: Float
    public let excludeOutside: Bool
    /// What `tf_crop_and_resize` gives outside the input.
    public let extrapolationValue: Float
    /// The op this layer stands for ("Resize" or "Upsample").
    public let layerName: String
    /// The pipeline `prepare` made on each context.
    private let gpuKernel = PerContext<GPUKernel<ResizeConstants>>()

    /// A resize to `outputShape` with `scales` per axis (positive, finite).
    public init(outputShape: [Int], scales: [Float], mode: Mode = .nearest, coordinateMode: CoordinateMode = .halfPixel,
                nearestMode: NearestMode = .roundPreferFloor, roi: [Float] = [], cubicCoefficient: Float = -0.75,
                excludeOutside: Bool = false, extrapolationValue: Float = 0, name: String = "Resize") throws {
        guard outputShape.count == scales.count, outputShape.allSatisfy({ $0 >= 0 }) else {
            throw LayerKitError.invalidParameter("\(name): output shape \(outputShape) and \(scales.count) scales differ")
        }
        guard scales.allSatisfy({ $0 > 0 && $0.isFinite }) else {
            throw LayerKitError.invalidParameter("\(name): scales \(scales) must be positive and finite")
        }
        guard coordinateMode != .tfCropAndResize || roi.count == 2 * scales.count else {
            throw LayerKitError.invalidParameter("\(name): tf_crop_and_resize needs a roi of \(2 * scales.count) values, "
                                                 + "got \(roi.count)")
        }
        self.outputShape = outputShape
        self.scales = scales
        self.mode = mode
        self.coordinateMode = coordinateMode
        self.nearestMode = nearestMode
        self.roi = roi
        self.cubicCoefficient = cubicCoefficient
        self.excludeOutside = excludeOutside
        self.extrapolationValue = extrapolationValue
        layerName = name
    }

    /// `outputShape`; throws unless the input has its rank.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        guard inputShapes[0].count == outputShape.count else {
            throw LayerKitError.shapeMismatch("\(layerName): input \(Tensor.describe(inputShapes[0])) is not of rank "
                                              + "\(outputShape.count)")
        }
        guard zip(inputShapes[0], outputShape).allSatisfy({ $0 > 0 || $1 == 0 }) else {
            throw LayerKitError.shapeMismatch("\(layerName): cannot resize an empty axis of \(Tensor.describe(inputShapes[0]))")
        }
        _ = try Tensor.elementCount(of: outputShape)
        return [outputShape]
    }

    // MARK: - Tables

    /// One axis's mapping: per output index, `taps` input indices and weights.
    struct AxisTable {
        /// The input extent the indices point into.
        var inputLength: Int
        var taps: Int
        var indices: [Int]
        var weights: [Float]
        /// Per output index: outside the input (tf_crop_and_resize), so the extrapolation value.
        var outside: [Bool]

        /// The output extent.
        var outputLength: Int { outside.count }

        /// Whether output index x reads input index x alone, for every
        /// index of an output as long as the input. The lengths are compared
        /// first: a shrink to 1 (asymmetric, align_corners,
        /// pytorch_half_pixel) or 64 to 63 by `floor` maps each output index
        /// x to input x, yet skipping that pass left the axis at its input
        /// extent and the next pass or the final copy overran the output.
        var isIdentity: Bool {
            outputLength == inputLength && outside.indices.allSatisfy { x in
                let used = ((x * taps)..<(x * taps + taps)).filter { weights[$0] != 0 }
                return !outside[x] && used.count == 1 && indices[used[0]] == x && weights[used[0]] == 1
            }
        }
    }

    /// The input coordinate of output index `x` along `axis` (onnxruntime's float arithmetic).
    func originalCoordinate(_ x: Int, axis: Int, input: Int, output: Int) -> Float {
        let (xr, s, li, lr) = (Float(x), scales[axis], Float(input), Float(output))
        switch coordinateMode {
        case .halfPixel: return (xr + 0.5) / s - 0.5
        case .halfPixelSymmetric:
            let adjustment = lr / (s * li)
            let center = li / 2
            let offset = center * (1 - adjustment)
            return offset + (xr + 0.5) / s - 0.5
        case .pytorchHalfPixel: return output > 1 ? (xr + 0.5) / s - 0.5 : 0
        case .alignCorners: return output == 1 ? 0 : xr * (li - 1) / (lr - 1)
        case .asymmetric: return xr / s
        case .tfHalfPixelForNN: return (xr + 0.5) / s
        case .tfCropAndResize:
            let (start, end) = (roi[axis], roi[scales.count + axis])
            return output > 1 ? start * (li - 1) + xr * (end - start) * (li - 1) / (lr - 1) : 0.5 * (start + end) * (li - 1)
        }
    }

    func nearestIndex(_ x: Float, downsampling: Bool) -> Float {
        switch nearestMode {
        case .roundPreferFloor: return x == x.rounded(.down) + 0.5 ? x.rounded(.down) : x.rounded()
        case .roundPreferCeil: return x.rounded()
        case .floor: return x.rounded(.down)
        case .ceil: return x.rounded(.up)
        case .simple: return downsampling ? x.rounded(.up) : x.rounded(.towardZero)
        }
    }

    /// onnxruntime's cubic convolution weights for a coordinate `s` past its floor.
    func cubicWeights(_ s: Float) -> [Float] {
        let a = cubicCoefficient
        let (s1, s2, s3) = (s + 1, 1 - s, 2 - s)
        return [((a * s1 - 5 * a) * s1 + 8 * a) * s1 - 4 * a, ((a + 2) * s - (a + 3)) * s * s + 1,
                ((a + 2) * s2 - (a + 3)) * s2 * s2 + 1, ((a * s3 - 5 * a) * s3 + 8 * a) * s3 - 4 * a]
    }

    func table(axis: Int, input: Int, output: Int) -> AxisTable {
        let taps = mode == .nearest ? 1 : mode == .linear ? 2 : 4
        var table = AxisTable(inputLength: input, taps: taps, indices: Array(repeating: 0, count: output * taps),
                              weights: Array(repeating: 0, count: output * taps),
                              outside: Array(repeating: false, count: output))
        let last = Float(input - 1)
        for x in 0..<output {
            let xo = originalCoordinate(x, axis: axis, input: input, output: output)
            if coordinateMode == .tfCropAndResize, !(xo >= 0 && xo <= last) {
                table.outside[x] = true
                continue
            }
            switch mode {
            case .nearest:
                let index = nearestIndex(xo, downsampling: scales[axis] < 1)
                table.indices[x] = index.isNaN ? 0 : Int(min(max(index, 0), last))
                table.weights[x] = 1
            case .linear:
                let clamped = min(max(xo, 0), last)
                let low = Int(clamped), high = min(Int(clamped) + 1, input - 1)
                let fraction = clamped - Float(low)
                table.indices[2 * x] = low
                table.indices[2 * x + 1] = high
                table.weights[2 * x] = 1 - fraction
                table.weights[2 * x + 1] = fraction
            case .cubic:
                let floor = xo.rounded(.down)
                var weights = cubicWeights(xo - floor)
                let base = Int(floor) - 1
                if excludeOutside {
                    for k in 0..<4 where !(0..<input).contains(base + k) { weights[k] = 0 }
                    let sum = weights.reduce(0, +)
                    if sum != 0 { weights = weights.map { $0 / sum } }
                }
                for k in 0..<4 {
                    table.indices[4 * x + k] = min(max(base + k, 0), input - 1)
                    table.weights[4 * x + k] = weights[k]
                }
            }
        }
        return table
    }

    // MARK: - CPU

    /// One axis at a time, from the last: each pass maps rows of the axis
    /// through its table (axes whose table is the identity are skipped).
    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        guard outputs[0].count > 0 else { return }
        var current = inputs[0]
        var passes: [(axis: Int, table: AxisTable)] = []
        for axis in shape.indices.reversed() {
            let table = table(axis: axis, input: current.shape[axis], output: shape[axis])
            if !table.isIdentity { passes.append((axis, table)) }
        }
        guard !passes.isEmpty else {
            try requireSameShape(current.shape, outputs[0].shape)
            outputs[0].dataPointer.update(from: current.dataPointer, count: current.count)
            return
        }
        if passes.count == 2, passes[0].axis == shape.count - 1, passes[1].axis == shape.count - 2,
           passes.allSatisfy({ $0.table.taps == 1 && !$0.table.outside.contains(true) }) {
            var planes = current.shape
            planes[shape.count - 1] = passes[0].table.inputLength
            planes[shape.count - 2] = passes[1].table.inputLength
            try requireSameShape(current.shape, planes)
            planes[shape.count - 1] = passes[0].table.outputLength
            planes[shape.count - 2] = passes[1].table.outputLength
            try requireSameShape(outputs[0].shape, planes)
            nearestPlanes(current, into: outputs[0], rows: passes[1].table, columns: passes[0].table)
            return
        }
        for (p, pass) in passes.enumerated() {
            var next = current.shape
            next[pass.axis] = shape[pass.axis]
            let destination = p == passes.count - 1 ? outputs[0] : try Tensor(shape: next)
            try requirePass(from: current.shape, to: destination.shape, axis: pass.axis, table: pass.table)
            resize(current, into: destination, axis: pass.axis, table: pass.table)
            current = destination
        }
    }

    /// Throws unless `shape` is `expected`: the unchecked kernels below
    /// index by these extents, so a disagreement (a pass skipped as an
    /// identity that was none) must stop here, not overrun a buffer.
    private func requireSameShape(_ shape: [Int], _ expected: [Int]) throws {
        guard shape == expected else {
            throw LayerKitError.shapeMismatch("\(layerName): internal shape \(Tensor.describe(shape)) is not "
                                              + "\(Tensor.describe(expected)) (a resize pass was lost)")
        }
    }

    /// Throws unless a pass along `axis` with `table` maps `source` onto
    /// `destination`: the table's lengths are the two extents of `axis`, and
    /// every other extent is equal.
    private func requirePass(from source: [Int], to destination: [Int], axis: Int, table: AxisTable) throws {
        var (input, output) = (destination, source)
        input[axis] = table.inputLength
        output[axis] = table.outputLength
        try requireSameShape(source, input)
        try requireSameShape(destination, output)
    }

    private func resize(_ source: Tensor, into destination: Tensor, axis: Int, table: AxisTable) {
        let inner = LayerChecks.product(source.shape[(axis + 1)...])
        let (inLength, outLength) = (source.shape[axis], destination.shape[axis])
        let rows = destination.count / inner
        let extrapolation = extrapolationValue
        if inner == 1 {
            resizeLastAxis(source, into: destination, inLength: inLength, outLength: outLength, table: table)
            return
        }
        forEachChunk(count: rows, chunkSize: max(1, defaultChunkSize / inner), threadCount: CPUThreads.current) { range in
            let (from, to) = (source.dataPointer, destination.dataPointer)
            for row in range {
                let (outer, x) = (row / outLength, row % outLength)
                let out = to + row * inner
                if table.outside[x] {
                    out.update(repeating: extrapolation, count: inner)
                    continue
                }
                let base = from + outer * inLength * inner
                if table.taps == 1 {
                    // Nearest: one row copied, not zeroed first.
                    out.update(from: base + table.indices[x] * inner, count: inner)
                    continue
                }
                out.update(repeating: 0, count: inner)
                for k in 0..<table.taps {
                    let weight = table.weights[x * table.taps + k]
                    guard weight != 0 || table.taps == 1 else { continue }
                    let line = base + table.indices[x * table.taps + k] * inner
                    if table.taps == 1 {
                        out.update(from: line, count: inner)
                    } else {
                        for i in 0..<inner { out[i] += weight * line[i] }
                    }
                }
            }
        }
    }

    /// Nearest over the last two axes in one pass, no intermediate tensor:
    /// each output row gathers the input row its table picks. The style
    /// net's two 2x upsamplings: 2.9 ms in two passes (the first into a
    /// fresh 4-8 MB tensor), 1.55 ms this way (1 thread, medians of 3
    /// profiles alternated, load 4.5; onnxruntime 2.1 ms).
    private func nearestPlanes(_ source: Tensor, into destination: Tensor, rows: AxisTable, columns: AxisTable) {
        let rank = destination.shape.count
        let (inH, inW) = (source.shape[rank - 2], source.shape[rank - 1])
        let (outH, outW) = (destination.shape[rank - 2], destination.shape[rank - 1])
        let count = destination.count / outW
        forEachChunk(count: count, chunkSize: max(1, defaultChunkSize / outW), threadCount: CPUThreads.current) { range in
            rows.indices.withUnsafeBufferPointer { rowIndex in
                columns.indices.withUnsafeBufferPointer { column in
                    for r in range {
                        let (plane, y) = (r / outH, r % outH)
                        let line = source.dataPointer + (plane * inH + rowIndex[y]) * inW
                        let out = destination.dataPointer + r * outW
                        for x in 0..<outW { out[x] = line[column[x]] }
                    }
                }
            }
        }
    }

    /// The last axis: a row of the input gathered into a row of the
    /// output. Its rows of one element each cost a fill, a table read and a
    /// one-element copy: the style net's two nearest 2x Resizes took
    /// 18.7 ms together at 1 thread that way (onnxruntime 2.1 ms) and 2.9 ms
    /// this way (medians of 3 profiles, A/B alternated, load 4.0). The same
    /// sums in the same order as the row path.
    /// (`axis` may be any axis whose later extents are all 1.)
    private func resizeLastAxis(_ source: Tensor, into destination: Tensor, inLength: Int, outLength: Int,
                                table: AxisTable) {
        let rows = destination.count / outLength
        let (extrapolation, taps) = (extrapolationValue, table.taps)
        forEachChunk(count: rows, chunkSize: max(1, defaultChunkSize / outLength), threadCount: CPUThreads.current) { range in
            table.indices.withUnsafeBufferPointer { indices in
                table.weights.withUnsafeBufferPointer { weights in
                    table.outside.withUnsafeBufferPointer { outside in
                        for row in range {
                            let (line, out) = (source.dataPointer + row * inLength, destination.dataPointer + row * outLength)
                            if taps == 1 {
                                for x in 0..<outLength { out[x] = outside[x] ? extrapolation : line[indices[x]] }
                                continue
                            }
                            for x in 0..<outLength {
                                guard !outside[x] else { out[x] = extrapolation; continue }
                                var sum: Float = 0
                                for k in (x * taps)..<(x * taps + taps) where weights[k] != 0 {
                                    sum += weights[k] * line[indices[k]]
                                }
                                out[x] = sum
                            }
                        }
                    }
                }
            }
        }
    }

    // MARK: - GPU

    /// Up to rank 4 (the policy checks the rank), the batch and channel axes unchanged.
    public var hasGPUImplementation: Bool { true }

    public func whyNotGPU(inputShapes: [[Int]], outputShapes: [[Int]]) -> String? {
        guard let input = inputShapes.first, input.count == outputShape.count else { return "its input has another rank" }
        for axis in 0..<min(2, input.count) where !table(axis: axis, input: input[axis], output: outputShape[axis]).isIdentity {
            return "its GPU form resizes the spatial axes only (axes 2 and 3), not the batch or channel axis"
        }
        return nil
    }

    /// Creates the pipeline on `context`, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try kernel(on: context) }

    private func kernel(on context: GPUContext) throws -> GPUKernel<ResizeConstants> {
        try gpuKernel.value(on: context) { try BuiltInShaders.resize.kernel(on: context) }
    }

    /// `Shaders/resize.comp`: each output texel sums the taps of its W and
    /// H table entries (a temporary buffer of two vec4s per entry).
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1, outputShape.count <= 4,
              whyNotGPU(inputShapes: [Array(inputs[0].shape.prefix(outputShape.count))], outputShapes: []) == nil else {
            throw LayerKitError.unsupported("\(layerName) on the GPU takes 1 input and 1 output image and resizes "
                                            + "axes 2 and 3 only")
        }
        let (input, output) = (inputs[0], outputs[0])
        let rank = outputShape.count
        let tensorInput = Array(input.shape.prefix(rank))
        guard try outputShapes(forInputShapes: [tensorInput])[0] + Array(repeating: 1, count: 4 - rank) == output.shape else {
            throw LayerKitError.shapeMismatch("\(layerName): output image \(Tensor.describe(output.shape)) is not "
                                              + "\(Tensor.describe(outputShape))")
        }
        let identity = { (length: Int) in AxisTable(inputLength: length, taps: 1, indices: Array(0..<length),
                                                   weights: Array(repeating: 1, count: length),
                                                   outside: Array(repeating: false, count: length)) }
        let width = rank > 3 ? table(axis: 3, input: input.width, output: output.width) : identity(output.width)
        let height = rank > 2 ? table(axis: 2, input: input.height, output: output.height) : identity(output.height)
        let taps = max(width.taps, height.taps)
        let entries = [width, height]
        let constants = ResizeConstants(shape: output.shapeConstants, inputWidth: UInt32(input.width),
                                        inputHeight: UInt32(input.height), taps: UInt32(taps),
                                        heightTable: UInt32(output.width), extrapolation: extrapolationValue)
        let buffer = try commandBuffer.temporaryBuffer(floats: 8 * (output.width + output.height)) { floats in
            var entry = 0
            for table in entries {
                for x in 0..<table.outside.count {
                    for k in 0..<4 {
                        let tap = k < table.taps
                        floats[8 * entry + k] = table.outside[x] ? -1 : Float(tap ? table.indices[x * table.taps + k] : 0)
                        floats[8 * entry + 4 + k] = tap ? table.weights[x * table.taps + k] : 0
                    }
                    entry += 1
                }
            }
        }
        try commandBuffer.dispatch(kernel(on: commandBuffer.context), images: [input, output], buffers: [buffer],
                                   constants: constants, threads: output.threads)
    }
}
