import CKernels
import Synchronization

/// ONNX `ConvTranspose` over 1, 2 or 3 spatial axes: `[N, C, D...]` to
/// `[N, M, O...]` with weights `[C, M/group, k...]` and an optional bias `[M]`.
///
/// Input cell i of an axis spreads over output cells `i * stride - head +
/// t * dilation` (t < kernel). Per axis, with `natural = stride * (in - 1) +
/// output_padding + (kernel - 1) * dilation + 1`, as onnxruntime (and the
/// ONNX spec) resolve it:
/// - `output_shape` given: out = that; total = max(0, natural - out), split
///   head = total / 2 under SAME_UPPER, else head = total - total / 2 (the
///   odd cell first); explicit pads are ignored; out may pass natural by
///   less than a stride (the extra cells hold the bias alone).
/// - SAME_UPPER / SAME_LOWER: total = max(0, natural - in * stride), split
///   as above; out = natural - total.
/// - VALID: no pads; out = natural. Explicit pads: out = natural - begin - end.
/// `output_padding` must be less than the stride or the dilation.
///
/// CPU: per group, a matrix product (`lk_sgemm_f32`) of the transposed
/// weights with the input (one column per input cell), whose rows are then
/// added into the output (col2im). GPU (1-D and 2-D, `ConvTranspose+GPU`):
/// `conv_transpose2d.comp`, one invocation per output texel gathering the
/// input cells that reach it. A 1-D one runs as the 2-D one of the
/// `[N, C, L, 1]` image its tensor is by the rank rule.
public final class ConvTranspose: Layer {
    public var layerName: String { "ConvTranspose" }
    /// The weights, `[C, M/group, k...]` (a copy).
    public let weights: Tensor
    /// The bias, `[M]`, if any (a copy).
    public let bias: Tensor?
    /// Steps of the input cells over the output, one per spatial axis.
    public let strides: [Int]
    /// Spacing of the kernel taps over the output.
    public let dilations: [Int]
    /// Pads (explicit: all begins, then all ends), SAME or VALID.
    public let padding: Padding
    /// Cells added at the end of each axis (ONNX `output_padding`).
    public let outputPadding: [Int]
    /// The spatial output extents (ONNX `output_shape`), if given.
    public let outputShape: [Int]?
    /// The number of groups.
    public let group: Int

    /// The number of spatial axes: 1, 2 or 3.
    public var spatialRank: Int { weights.shape.count - 2 }
    /// C.
    public var inputChannels: Int { weights.shape[0] }
    /// M: `group` times the weights' second extent.
    public var outputChannels: Int { group * weights.shape[1] }
    /// The weights' kernel extents.
    var kernel: [Int] { Array(weights.shape[2...]) }
    /// The bias as one vec4 per output slice, for the shader (zeros past M).
    let deviceBias: [Float]
    /// What `prepare` made on each context.
    let gpuState = PerContext<PreparedConvolution>()

    /// The largest attribute value (stride, dilation, pad, output padding
    /// or shape) a layer takes, as `ONNXNodeContext.spatial` bounds them:
    /// the shape arithmetic on them cannot overflow.
    static let maxAttributeValue = 1 << 20

    /// The most floats one run's column matrix holds (4 MiB).
    static let columnBudget = 1 << 20

    /// Makes the layer; throws for weights, bias or attributes that do not
    /// fit. `strides`, `dilations` and `outputPadding` default to 1s and 0s.
    public init(weights: Tensor, bias: Tensor? = nil, strides: [Int]? = nil, dilations: [Int]? = nil,
                padding: Padding? = nil, outputPadding: [Int]? = nil, outputShape: [Int]? = nil,
                group: Int = 1) throws {
        let rank = weights.shape.count - 2
        guard (1...3).contains(rank), weights.count > 0 else {
            throw LayerKitError.invalidWeights(
                "ConvTranspose: weights must be [C, M/group, k...] with 1 to 3 kernel axes and no empty extent, got "
                + "\(Tensor.describe(weights.shape))")
        }
        guard group >= 1, weights.shape[0] % group == 0 else {
            throw LayerKitError.invalidParameter(
                "ConvTranspose: group must be >= 1 and divide the \(weights.shape[0]) input channels, got \(group)")
        }
        let m = group * weights.shape[1]
        if let bias, bias.shape != [m] {
            throw LayerKitError.invalidWeights(
                "ConvTranspose: bias must be [\(m)] (one per output channel), got \(Tensor.describe(bias.shape))")
        }
        let ones = Array(repeating: 1, count: rank), zeros = Array(repeating: 0, count: rank)
        let strides = strides ?? ones, dilations = dilations ?? ones, outputPadding = outputPadding ?? zeros
        let padding = padding ?? .explicit(zeros + zeros)
        let bound = Self.maxAttributeValue
        for (name, values, least) in [("strides", strides, 1), ("dilations", dilations, 1), ("output_padding", outputPadding, 0),
                                      ("output_shape", outputShape ?? zeros, 0)]
        where values.count != rank || values.contains(where: { $0 < least || $0 > bound }) {
            throw LayerKitError.invalidParameter(
                "ConvTranspose: \(name) must be \(rank) values from \(least) to \(bound), got \(values)")
        }
        if case .explicit(let pads) = padding, pads.count != 2 * rank || pads.contains(where: { $0 < 0 || $0 > bound }) {
            throw LayerKitError.invalidParameter(
                "ConvTranspose: pads must be \(2 * rank) values from 0 to \(bound) (all begins, then all ends), got \(pads)")
        }
        for axis in 0..<rank where outputPadding[axis] >= max(strides[axis], dilations[axis]) {
            throw LayerKitError.invalidParameter(
                "ConvTranspose: output_padding \(outputPadding[axis]) of spatial axis \(axis) must be less than its stride "
                + "(\(strides[axis])) or dilation (\(dilations[axis]))")
        }
        if weights.shape[2...].contains(where: { $0 > bound }) {
            throw LayerKitError.invalidWeights("ConvTranspose: kernel extents past \(bound): \(Tensor.describe(weights.shape))")
        }
        self.weights = try Tensor(shape: weights.shape, values: weights.values)
        self.bias = try bias.map { try Tensor(shape: $0.shape, values: $0.values) }
        (self.strides, self.dilations, self.padding, self.group) = (strides, dilations, padding, group)
        (self.outputPadding, self.outputShape) = (outputPadding, outputShape)
        var deviceBias = [Float](repeating: 0, count: (m + 3) / 4 * 4)
        if let bias { deviceBias.replaceSubrange(0..<m, with: bias.elements) }
        self.deviceBias = deviceBias
    }

    /// One spatial axis resolved: the output cells cut from the start of
    /// the full spread (`head`, may be 0) and the output extent.
    struct Axis: Equatable {
        var head: Int
        var output: Int
    }

    /// The spatial axes resolved for an input's spatial extents.
    func axes(forInputExtents extents: [Int]) throws -> [Axis] {
        try extents.indices.map { axis in
            let input = extents[axis]
            guard input >= 1 else {
                throw LayerKitError.shapeMismatch("ConvTranspose: spatial axis \(axis) of the input is empty")
            }
            let (s, d, adj, k) = (strides[axis], dilations[axis], outputPadding[axis], kernel[axis])
            let (spread, overflow) = (input - 1).multipliedReportingOverflow(by: s)
            guard !overflow, spread < 1 << 60 else {
                throw LayerKitError.shapeMismatch("ConvTranspose: spatial axis \(axis) of \(input) cells overflows")
            }
            let natural = spread + adj + (k - 1) * d + 1
            let sameUpper = padding == .sameUpper
            func split(_ total: Int) -> Int { sameUpper ? total / 2 : total - total / 2 }
            let resolved: Axis
            if let outputShape {
                let output = outputShape[axis]
                guard output >= 1, output - natural < s else {
                    throw LayerKitError.invalidParameter(
                        "ConvTranspose: output_shape \(outputShape) does not fit the input's \(input) cells on spatial axis "
                        + "\(axis) (at most \(natural + s - 1) with stride \(s), kernel \(k), dilation \(d), output_padding \(adj))")
                }
                resolved = Axis(head: split(max(0, natural - output)), output: output)
            } else {
                switch padding {
                case .sameUpper, .sameLower:
                    let total = max(0, natural - input * s)
                    resolved = Axis(head: split(total), output: natural - total)
                case .valid:
                    resolved = Axis(head: 0, output: natural)
                case .explicit(let pads):
                    resolved = Axis(head: pads[axis], output: natural - pads[axis] - pads[spatialRank + axis])
                }
            }
            guard resolved.output >= 1 else {
                throw LayerKitError.shapeMismatch(
                    "ConvTranspose: the pads leave no output cell on spatial axis \(axis) (\(natural) cells before padding)")
            }
            return resolved
        }
    }

    /// The spatial axes for an input shape, checked against the weights.
    func axes(forInputShape shape: [Int]) throws -> [Axis] {
        try LayerChecks.requireRank(shape, in: spatialRank + 2...spatialRank + 2, layer: layerName)
        guard shape[1] == inputChannels else {
            throw LayerKitError.shapeMismatch(
                "ConvTranspose: input \(Tensor.describe(shape)) has \(shape[1]) channels; weights "
                + "\(Tensor.describe(weights.shape)) need \(inputChannels)")
        }
        return try axes(forInputExtents: Array(shape[2...]))
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        return [[shape[0], outputChannels] + (try axes(forInputShape: shape)).map(\.output)]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        let (input, output, weights, bias) = (inputs[0], outputs[0], weights, bias)
        let resolved = try axes(forInputShape: input.shape)
        // Padded to three axes with leading unit ones, so one loop serves every rank.
        let lead = 3 - spatialRank
        let pad = { (values: [Int], unit: Int) in Array(repeating: unit, count: lead) + values }
        let inExtent = pad(Array(input.shape[2...]), 1), outExtent = pad(resolved.map(\.output), 1)
        let heads = pad(resolved.map(\.head), 0), k = pad(kernel, 1)
        let s = pad(strides, 1), d = pad(dilations, 1)
        let (c, m, group) = (inputChannels, outputChannels, group)
        let cg = c / group, mg = m / group
        let taps = k.reduce(1, *), rows = mg * taps
        let inPlane = inExtent.reduce(1, *), outPlane = outExtent.reduce(1, *)
        let run = max(1, min(inPlane, Self.columnBudget / rows))
        let work = input.count * rows
        let threads = min(CPUThreads.current, max(1, work / Convolution.minimumWorkPerThread))
        let failed = Atomic(false)
        // One (item, group) a task: its output channels are its own.
        forEachChunk(count: shape[0] * group, chunkSize: 1, threadCount: threads) { range in
            guard let column = try? Tensor(shape: [rows * run]) else {
                failed.store(true, ordering: .relaxed)
                return
            }
            let col = column.dataPointer
            for task in range {
                let (n, g) = (task / group, task % group)
                let x = input.dataPointer + (n * c + g * cg) * inPlane
                let y = output.dataPointer + (n * m + g * mg) * outPlane
                for o in 0..<mg {
                    (y + o * outPlane).update(repeating: bias?[g * mg + o] ?? 0, count: outPlane)
                }
                for first in stride(from: 0, to: inPlane, by: run) {
                    let count = min(run, inPlane - first)
                    // col[r][j] = sum over the group's input channels ci of
                    // w[g * cg + ci][r] * x[ci][first + j], r = (o, tap).
                    let status = lk_sgemm_f32(rows, count, cg, 1, weights.dataPointer + g * cg * rows, 1, rows,
                                              x + first, inPlane, col, count, nil, nil, 0)
                    if status != 0 {
                        failed.store(true, ordering: .relaxed)
                        return
                    }
                    for r in 0..<rows {
                        let (o, tap) = (r / taps, r % taps)
                        let t0 = tap / (k[1] * k[2]), t1 = tap / k[2] % k[1], t2 = tap % k[2]
                        let plane = y + o * outPlane, values = col + r * count
                        for j in 0..<count {
                            let p = first + j
                            let i0 = p / (inExtent[1] * inExtent[2]), i1 = p / inExtent[2] % inExtent[1]
                            let i2 = p % inExtent[2]
                            let o0 = i0 * s[0] - heads[0] + t0 * d[0], o1 = i1 * s[1] - heads[1] + t1 * d[1]
                            let o2 = i2 * s[2] - heads[2] + t2 * d[2]
                            guard o0 >= 0, o0 < outExtent[0], o1 >= 0, o1 < outExtent[1], o2 >= 0, o2 < outExtent[2] else {
                                continue
                            }
                            plane[(o0 * outExtent[1] + o1) * outExtent[2] + o2] += values[j]
                        }
                    }
                }
            }
        }
        if failed.load(ordering: .relaxed) {
            throw LayerKitError.unsupported("ConvTranspose: out of memory for the column buffer")
        }
    }
}
