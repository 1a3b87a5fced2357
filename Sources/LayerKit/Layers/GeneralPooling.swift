import Foundation

/// ONNX `MaxPool`, `AveragePool` and `LpPool` (and `GlobalLpPool`, one
/// window over the whole input) over 1, 2 or 3 spatial axes on the CPU,
/// with MaxPool's optional second output, `Indices`: what `Pooling` (the
/// 1-D and 2-D pools of the CPU kernel and the GPU) does not hold.
///
/// The window geometry is `Padding.window`'s, axis by axis (pads, auto_pad,
/// strides, dilations, ceil mode, as onnxruntime). An average divides by
/// the cells of the window inside the input, or, with `countIncludePad`,
/// inside the padded extent (with ceil mode, not the cells of a window past
/// it), the product over the axes, as `Pooling` does. A max window that
/// covers no input cell gives -inf; a NaN in a window propagates. An Lp
/// pool is `(sum of |x|^p over the window's input cells)^(1/p)` (pad cells
/// add 0), summed in double precision.
///
/// `Indices`: per output cell, the flat index of its maximum in the whole
/// input tensor, `((n * C + c) * D1 + d1) * D2 + ...` (row-major, ONNX
/// `storage_order` 0), or with the spatial axes column-major (`storage_order`
/// 1: the first spatial axis varies fastest), the first maximum in window
/// order on ties. LayerKit's tensors are Float32, so the indices are Float32
/// values, exact up to 2^24: a larger input is refused.
public final class GeneralPooling: Layer, Sendable {
    /// What a window computes.
    public enum Kind: Sendable, Equatable {
        /// The largest value (MaxPool).
        case max
        /// The mean (AveragePool).
        case average(countIncludePad: Bool)
        /// The p-norm (LpPool; p >= 1).
        case lpNorm(p: Int)
    }

    /// What a window computes.
    public let kind: Kind
    /// Window extents, one per spatial axis.
    public let kernel: [Int]
    /// Window steps.
    public let strides: [Int]
    /// Spacing between window cells.
    public let dilations: [Int]
    /// The padding (explicit pads: all begins, then all ends).
    public let padding: Padding
    /// Whether output extents round up (ONNX `ceil_mode`).
    public let ceilMode: Bool
    /// Whether the layer also outputs MaxPool's `Indices`.
    public let outputsIndices: Bool
    /// Whether `Indices` count the spatial axes column-major (ONNX `storage_order` 1).
    public let columnMajorIndices: Bool

    /// The largest input whose flat indices Float32 holds exactly.
    public static let maxIndexedElements = 1 << 24

    /// A pool of `kind` with 1 to 3 spatial axes (the kernel's count).
    /// Throws for miscounted or non-positive values (window values past
    /// 2^20 included), and for `outputsIndices` on any pool but max.
    public init(kind: Kind, kernel: [Int], strides: [Int]? = nil, dilations: [Int]? = nil,
                padding: Padding = .valid, ceilMode: Bool = false, outputsIndices: Bool = false,
                columnMajorIndices: Bool = false) throws {
        let name = Self.name(of: kind)
        let rank = kernel.count
        if case .lpNorm(let p) = kind, p < 1 {
            throw LayerKitError.invalidParameter("\(name): p must be >= 1, got \(p)")
        }
        guard (1...3).contains(rank) else {
            throw LayerKitError.invalidParameter("\(name): kernel \(kernel) must have 1 to 3 values (spatial axes)")
        }
        let strides = strides ?? Array(repeating: 1, count: rank)
        let dilations = dilations ?? Array(repeating: 1, count: rank)
        // Bounded as ONNXNodeContext.spatial bounds them: the window arithmetic cannot overflow.
        let bound = ONNXNodeContext.maxWindowValue
        for (what, values) in [("kernel", kernel), ("strides", strides), ("dilations", dilations)]
        where values.count != rank || values.contains(where: { $0 <= 0 || $0 > bound }) {
            throw LayerKitError.invalidParameter("\(name): \(what) \(values) must be \(rank) values from 1 to \(bound)")
        }
        if case .explicit(let pads) = padding, pads.count != 2 * rank || pads.contains(where: { $0 < 0 || $0 > bound }) {
            throw LayerKitError.invalidParameter("\(name): pads \(pads) must be \(2 * rank) values >= 0 (all begins, then all ends)")
        }
        guard !outputsIndices || kind == .max else {
            throw LayerKitError.invalidParameter("\(name) has no Indices output")
        }
        self.kind = kind
        self.kernel = kernel
        self.strides = strides
        self.dilations = dilations
        self.padding = padding
        self.ceilMode = ceilMode
        self.outputsIndices = outputsIndices
        self.columnMajorIndices = columnMajorIndices
    }

    public var layerName: String { Self.name(of: kind) }

    private static func name(of kind: Kind) -> String {
        switch kind {
        case .max: "MaxPool"
        case .average: "AveragePool"
        case .lpNorm: "LpPool"
        }
    }

    /// The windows of each spatial axis of an input shape.
    func windows(_ shape: [Int]) throws -> [Padding.Axis] {
        try LayerChecks.requireRank(shape, in: kernel.count + 2...kernel.count + 2, layer: layerName)
        return try kernel.indices.map { axis in
            try padding.window(axis: axis, of: kernel.count, input: shape[axis + 2], kernel: kernel[axis],
                               stride: strides[axis], dilation: dilations[axis], ceilMode: ceilMode, layer: layerName)
        }
    }

    /// `[N, C, out...]`, twice with `Indices`.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        let output = Array(shape[..<min(2, shape.count)]) + (try windows(shape)).map(\.output)
        if outputsIndices, try Tensor.elementCount(of: shape) > Self.maxIndexedElements {
            throw LayerKitError.unsupported(
                "MaxPool: the Indices of an input of \(Tensor.describe(shape)) would pass 2^24, past what LayerKit's "
                + "Float32 tensors hold exactly; use a smaller input or drop the Indices output")
        }
        return outputsIndices ? [output, output] : [output]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shapes = try outputShapes(forInputShapes: inputs.map(\.shape))
        guard outputs.map(\.shape) == shapes else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): outputs \(outputs.map { Tensor.describe($0.shape) }) given, \(shapes.map(Tensor.describe)) expected")
        }
        let input = inputs[0], output = outputs[0], indices = outputsIndices ? outputs[1] : nil
        let windows = try windows(input.shape)
        // Padded to three axes (leading unit axes), so one loop serves all ranks.
        let lead = 3 - kernel.count
        let inExtent = Array(repeating: 1, count: lead) + input.shape[2...]
        let outExtent = Array(repeating: 1, count: lead) + windows.map(\.output)
        let unit = Padding.Axis(begin: 0, end: 0, output: 1)
        let axes = Array(repeating: unit, count: lead) + windows
        let k = Array(repeating: 1, count: lead) + kernel
        let s = Array(repeating: 1, count: lead) + strides
        let d = Array(repeating: 1, count: lead) + dilations
        // Flat-index strides of the spatial axes (row- or column-major), for Indices.
        let spatial = Array(input.shape[2...])
        var indexStride = [Int](repeating: 0, count: 3)
        var step = 1
        for axis in (columnMajorIndices ? Array(spatial.indices) : spatial.indices.reversed()) {
            indexStride[lead + axis] = step
            step *= spatial[axis]
        }
        let inPlane = inExtent.reduce(1, *), outPlane = outExtent.reduce(1, *)
        let planes = input.shape[0] * input.shape[1]
        let isMax = kind == .max, includePad = kind == .average(countIncludePad: true)
        let p: Int? = if case .lpNorm(let p) = kind { p } else { nil }
        // Per axis and output position: the window's first cell, and the
        // cells its divisor counts.
        var starts: [[Int]] = [], counts: [[Int]] = []
        for a in 0..<3 {
            let first = (0..<outExtent[a]).map { $0 * s[a] - axes[a].begin }
            starts.append(first)
            // Only an average divides by them.
            guard case .average = kind else { continue }
            let (lo, hi) = includePad ? (-axes[a].begin, inExtent[a] + axes[a].end) : (0, inExtent[a])
            counts.append(first.map { start in (0..<k[a]).filter { (lo..<hi).contains(start + $0 * d[a]) }.count })
        }
        let chunk = max(1, defaultChunkSize / max(inPlane, 1))
        let (windowStarts, cellCounts, flatStrides) = (starts, counts, indexStride)
        forEachChunk(count: planes, chunkSize: chunk, threadCount: CPUThreads.current) { range in
            for plane in range {
                let x = input.dataPointer + plane * inPlane, y = output.dataPointer + plane * outPlane
                var o = 0
                for o0 in 0..<outExtent[0] {
                    for o1 in 0..<outExtent[1] {
                        for o2 in 0..<outExtent[2] {
                            var best = -Float.infinity, bestIndex = -1, sum: Float = 0, norm: Double = 0
                            for k0 in 0..<k[0] {
                                let i0 = windowStarts[0][o0] + k0 * d[0]
                                guard i0 >= 0, i0 < inExtent[0] else { continue }
                                for k1 in 0..<k[1] {
                                    let i1 = windowStarts[1][o1] + k1 * d[1]
                                    guard i1 >= 0, i1 < inExtent[1] else { continue }
                                    for k2 in 0..<k[2] {
                                        let i2 = windowStarts[2][o2] + k2 * d[2]
                                        guard i2 >= 0, i2 < inExtent[2] else { continue }
                                        let v = x[(i0 * inExtent[1] + i1) * inExtent[2] + i2]
                                        if isMax {
                                            // Strictly greater: the first maximum wins; a NaN is taken and stays.
                                            if bestIndex < 0 || v > best || (v.isNaN && !best.isNaN) {
                                                best = v
                                                bestIndex = i0 * flatStrides[0] + i1 * flatStrides[1] + i2 * flatStrides[2]
                                            }
                                        } else if let p {
                                            norm += p == 1 ? Double(abs(v)) : p == 2 ? Double(v) * Double(v)
                                                : pow(Double(abs(v)), Double(p))
                                        } else {
                                            sum += v
                                        }
                                    }
                                }
                            }
                            if isMax {
                                y[o] = best
                                indices?.dataPointer[plane * outPlane + o] = Float(plane * inPlane + max(bestIndex, 0))
                            } else if let p {
                                y[o] = Float(p == 1 ? norm : p == 2 ? norm.squareRoot() : pow(norm, 1 / Double(p)))
                            } else {
                                let cells = cellCounts[0][o0] * cellCounts[1][o1] * cellCounts[2][o2]
                                y[o] = cells > 0 ? sum / Float(cells) : 0
                            }
                            o += 1
                        }
                    }
                }
            }
        }
    }
}
