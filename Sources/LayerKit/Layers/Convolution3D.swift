import CKernels
import Synchronization

/// ONNX `Conv` in three dimensions on the CPU: `[N, C, D, H, W]` to
/// `[N, M, OD, OH, OW]` with weights `[M, C/group, kD, kH, kW]`, an optional
/// bias `[M]`, strides, dilations, pads (or auto_pad) and groups.
///
/// im2col and a matrix product per group (`lk_sgemm_f32`): for a run of
/// output cells, X_g holds one row per (input channel, kernel tap) of the
/// group and one column per output cell (zero where the tap reads padding),
/// and Y_g = W_g * X_g. Runs of cells are sized so that X_g stays a few MiB,
/// and are spread over threads. (A rank-5 tensor has no slice image: no GPU form.)
public final class Convolution3D: Layer {
    public var layerName: String { "Conv" }
    /// The weights, `[M, C/group, kD, kH, kW]` (a copy).
    public let weights: Tensor
    /// The bias, `[M]`, if any (a copy).
    public let bias: Tensor?
    /// Strides along depth, height and width.
    public let strides: [Int]
    /// Dilations along depth, height and width.
    public let dilations: [Int]
    /// The padding rule (explicit pads: the three begins, then the three ends).
    public let padding: Padding
    /// The number of groups.
    public let group: Int

    /// M.
    public var outputChannels: Int { weights.shape[0] }
    /// C: `group` times the weights' second extent.
    public var inputChannels: Int { group * weights.shape[1] }

    /// The most floats one run's im2col matrix holds (4 MiB).
    static let columnBudget = 1 << 20

    /// Makes the layer; throws for weights, bias or attributes that do not fit.
    public init(weights: Tensor, bias: Tensor? = nil, strides: [Int] = [1, 1, 1], dilations: [Int] = [1, 1, 1],
                padding: Padding = .explicit([0, 0, 0, 0, 0, 0]), group: Int = 1) throws {
        guard weights.shape.count == 5, weights.count > 0 else {
            throw LayerKitError.invalidWeights(
                "Conv: 3-D weights must be [M, C/group, kD, kH, kW] with no empty extent, got \(Tensor.describe(weights.shape))")
        }
        try Convolution.requireGroupAndBias(weights: weights, bias: bias, group: group)
        // Bounded as ONNXNodeContext.spatial bounds them: the window arithmetic cannot overflow.
        let bound = ONNXNodeContext.maxWindowValue
        for (name, values) in [("strides", strides), ("dilations", dilations), ("kernel", Array(weights.shape[2...]))]
        where values.count != 3 || values.contains(where: { $0 < 1 || $0 > bound }) {
            throw LayerKitError.invalidParameter("Conv: \(name) must be three values from 1 to \(bound), got \(values)")
        }
        if case .explicit(let pads) = padding, pads.count != 6 || pads.contains(where: { $0 < 0 || $0 > bound }) {
            throw LayerKitError.invalidParameter(
                "Conv: pads must be six values from 0 to \(bound) (three begins, three ends), got \(pads)")
        }
        self.weights = try Tensor(shape: weights.shape, values: weights.values)
        self.bias = try bias.map { try Tensor(shape: $0.shape, values: $0.values) }
        (self.strides, self.dilations, self.padding, self.group) = (strides, dilations, padding, group)
    }

    /// Each spatial axis resolved for an input shape.
    private func windows(_ shape: [Int]) throws -> [Padding.Axis] {
        try LayerChecks.requireRank(shape, in: 5...5, layer: "Conv")
        guard shape[1] == inputChannels else {
            throw LayerKitError.shapeMismatch(
                "Conv: input \(Tensor.describe(shape)) has \(shape[1]) channels; weights \(Tensor.describe(weights.shape)) "
                + "with group \(group) need \(inputChannels)")
        }
        return try (0..<3).map { axis in
            try padding.window(axis: axis, of: 3, input: shape[axis + 2], kernel: weights.shape[axis + 2],
                               stride: strides[axis], dilation: dilations[axis], ceilMode: false, layer: "Conv")
        }
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: "Conv")
        return [[inputShapes[0][0], outputChannels] + (try windows(inputShapes[0])).map(\.output)]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: "Conv")
        let (input, output, weights, bias) = (inputs[0], outputs[0], weights, bias)
        let axes = try windows(input.shape)
        let inExtent = Array(input.shape[2...]), outExtent = Array(shape[2...])
        // SAME with a kernel narrower than the stride may resolve to a
        // negative leading pad; the windows then start at the first cell, as in 2-D.
        let begins = axes.map { max(0, $0.begin) }
        let kernel = Array(weights.shape[2...])
        let (strides, dilations, group) = (strides, dilations, group)
        let (c, m) = (inputChannels, outputChannels)
        let cg = c / group, mg = m / group
        let taps = kernel.reduce(1, *), k = cg * taps
        let inPlane = inExtent.reduce(1, *), cells = outExtent.reduce(1, *)
        let run = max(1, min(cells, Self.columnBudget / k))
        let runsPerImage = (cells + run - 1) / run
        let work = output.count * k
        let threads = min(CPUThreads.current, max(1, work / Convolution.minimumWorkPerThread))
        let failed = Atomic(false)
        forEachChunk(count: shape[0] * runsPerImage, chunkSize: 1, threadCount: threads) { range in
            guard let column = try? Tensor(shape: [k * run]) else {
                failed.store(true, ordering: .relaxed)
                return
            }
            let col = column.dataPointer
            for item in range {
                let n = item / runsPerImage, first = item % runsPerImage * run, count = min(run, cells - first)
                let x = input.dataPointer + n * c * inPlane
                let y = output.dataPointer + n * m * cells
                for g in 0..<group {
                    // im2col: row (c, kd, kh, kw), column p - first.
                    for ci in 0..<cg {
                        let plane = x + (g * cg + ci) * inPlane
                        for tap in 0..<taps {
                            let kd = tap / (kernel[1] * kernel[2]), kh = tap / kernel[2] % kernel[1], kw = tap % kernel[2]
                            let row = col + (ci * taps + tap) * count
                            for j in 0..<count {
                                let p = first + j
                                let od = p / (outExtent[1] * outExtent[2]), oh = p / outExtent[2] % outExtent[1]
                                let ow = p % outExtent[2]
                                let id = od * strides[0] - begins[0] + kd * dilations[0]
                                let ih = oh * strides[1] - begins[1] + kh * dilations[1]
                                let iw = ow * strides[2] - begins[2] + kw * dilations[2]
                                let inside = id >= 0 && id < inExtent[0] && ih >= 0 && ih < inExtent[1]
                                    && iw >= 0 && iw < inExtent[2]
                                row[j] = inside ? plane[(id * inExtent[1] + ih) * inExtent[2] + iw] : 0
                            }
                        }
                    }
                    let status = lk_sgemm_f32(
                        mg, count, k, 1, weights.dataPointer + g * mg * k, k, 1, col, count,
                        y + g * mg * cells + first, cells, bias.map { $0.dataPointer + g * mg }, nil, 0)
                    if status != 0 { failed.store(true, ordering: .relaxed) }
                }
            }
        }
        if failed.load(ordering: .relaxed) {
            throw LayerKitError.unsupported("Conv: out of memory for the im2col buffer")
        }
    }
}
