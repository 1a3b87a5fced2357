import Foundation

/// ConvInteger and QLinearConv: a direct convolution of zero-point-centered
/// integers summed exactly (see `TypedKernels+IntegerProducts`), in 1-D to
/// 3-D, with the float Conv's attributes (`auto_pad`, `pads`, `strides`,
/// `dilations`, `group`, `kernel_shape`) resolved by the same helpers
/// (`ONNXOperators.windowValues`, `padding`, `Padding.window`).
extension TypedKernels {
    /// The convolution's attributes, read once.
    static let convolutionAttributes = ["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"]

    /// The convolution of `x` by `w` (zero points subtracted), plus `bias`
    /// per output channel: its shape and integer sums.
    static func integerConvolution(_ x: [Int64], _ xShape: [Int], _ w: [Int64], _ wShape: [Int], bias: [Int64]?,
                                   _ node: ONNXNodeContext) throws -> (shape: [Int], values: [Int64]) {
        let spatial = xShape.count - 2
        guard (1...3).contains(spatial) else {
            throw node.error("x \(Tensor.describe(xShape)) must be of rank 3 to 5 ([N, C, spatial...])")
        }
        guard wShape.count == xShape.count, !wShape.contains(0) else {
            throw node.error("w \(Tensor.describe(wShape)) must be of x's rank \(xShape.count), with no empty extent")
        }
        let kernel = Array(wShape[2...])
        if let given = try node.ints("kernel_shape"), given != kernel {
            throw node.error("kernel_shape \(given) does not match w \(Tensor.describe(wShape))")
        }
        let group = try node.int("group", default: 1)
        let (channels, outputs) = (xShape[1], wShape[0])
        guard group >= 1, channels == group * wShape[1], outputs % group == 0 else {
            throw node.error("group \(group) does not fit x's \(channels) channels and w \(Tensor.describe(wShape)) "
                             + "(x's channels must be group x w's second extent, w's first a multiple of group)")
        }
        if let bias, bias.count != outputs { throw node.error("B holds \(bias.count) values; w has \(outputs) output channels") }
        let strides = try ONNXOperators.windowValues(node, "strides", count: spatial, fill: 1)
        let dilations = try ONNXOperators.windowValues(node, "dilations", count: spatial, fill: 1)
        let padding = try ONNXOperators.padding(node, spatialRank: spatial)
        let axes = try (0..<spatial).map { axis in
            try padding.window(axis: axis, of: spatial, input: xShape[axis + 2], kernel: kernel[axis], stride: strides[axis],
                               dilation: dilations[axis], ceilMode: false, layer: node.node.opType)
        }
        let shape = [xShape[0], outputs] + axes.map(\.output)
        let count = try ONNXFolding.checkedCount(shape, node)
        let inExtent = Array(xShape[2...]), outExtent = axes.map(\.output)
        let (inPlane, cells, taps) = (inExtent.reduce(1, *), outExtent.reduce(1, *), kernel.reduce(1, *))
        let (cg, mg) = (channels / group, outputs / group)
        let inStrides = (0..<spatial).map { inExtent[($0 + 1)...].reduce(1, *) }
        var y = [Int64](repeating: 0, count: count)
        // Per output cell: each tap's offset in an input plane, -1 where it reads padding.
        var offsets = [Int](repeating: -1, count: taps)
        for cell in 0..<cells {
            for tap in 0..<taps {
                var (restCell, restTap, offset, inside) = (cell, tap, 0, true)
                for axis in (0..<spatial).reversed() {
                    let o = restCell % outExtent[axis], k = restTap % kernel[axis]
                    (restCell, restTap) = (restCell / outExtent[axis], restTap / kernel[axis])
                    let i = o * strides[axis] - axes[axis].begin + k * dilations[axis]
                    inside = inside && (0..<inExtent[axis]).contains(i)
                    offset += i * inStrides[axis]
                }
                offsets[tap] = inside ? offset : -1
            }
            for n in 0..<xShape[0] {
                for m in 0..<outputs {
                    let g = m / mg
                    var sum = bias?[m] ?? 0
                    for c in 0..<cg {
                        let plane = (n * channels + g * cg + c) * inPlane, row = (m * cg + c) * taps
                        for tap in 0..<taps where offsets[tap] >= 0 { sum &+= x[plane + offsets[tap]] &* w[row + tap] }
                    }
                    y[(n * outputs + m) * cells + cell] = sum
                }
            }
        }
        return (shape, y)
    }

    /// ConvInteger: x, w and their optional zero points (x's one value,
    /// w's one value or one per output channel), to int32.
    static func convInteger(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(convolutionAttributes)
        let x = try input(0, inputs, node), w = try input(1, inputs, node)
        let result = try integerConvolution(try centeredInput(x, inputs.count > 2 ? inputs[2] : nil, name: "x_zero_point", node),
                                            x.shape, try centeredWeights(w, inputs.count > 3 ? inputs[3] : nil, node), w.shape,
                                            bias: nil, node)
        return [try TypedTensor(.int32, shape: result.shape, integers: result.values)]
    }

    /// QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point,
    /// y_scale, y_zero_point and an optional int32 bias B; w's scale and
    /// zero point one value or one per output channel.
    static func qLinearConv(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(convolutionAttributes)
        let x = try input(0, inputs, node), w = try input(3, inputs, node)
        let bias = inputs.count > 8 ? inputs[8] : nil
        if let bias, bias.shape.count != 1 { throw node.error("B \(Tensor.describe(bias.shape)) must be 1-D") }
        let result = try integerConvolution(try centeredInput(x, inputs[2], name: "x_zero_point", node), x.shape,
                                            try centeredWeights(w, inputs[5], node), w.shape, bias: bias?.integers(), node)
        let outputs = w.shape.first ?? 1, cells = result.shape.dropFirst(2).reduce(1, *)
        let multipliers = try multipliers(node, inputs, scales: [(1, "x_scale"), (4, "w_scale"), (6, "y_scale")], count: outputs)
        return [try requantized(result.values, shape: result.shape, multipliers: multipliers,
                                pick: { $0 / cells % outputs }, zeroPoint: 7, inputs, node)]
    }

    /// x less its zero point, which must be one value (onnxruntime's rule).
    private static func centeredInput(_ x: TypedTensor, _ zeroPoint: TypedTensor?, name: String,
                                      _ node: ONNXNodeContext) throws -> [Int64] {
        if let zeroPoint, zeroPoint.count != 1 {
            throw node.error("\(name) \(Tensor.describe(zeroPoint.shape)) must be one value")
        }
        return try centered(x, zeroPoint, name: name, node)
    }

    /// w less its zero point: one value, or one per output channel (`[M]`).
    private static func centeredWeights(_ w: TypedTensor, _ zeroPoint: TypedTensor?, _ node: ONNXNodeContext) throws -> [Int64] {
        guard let zeroPoint, zeroPoint.count > 1 else { return try centered(w, zeroPoint, name: "w_zero_point", node) }
        guard zeroPoint.shape == [w.shape.first ?? 0] else {
            throw node.error("w_zero_point \(Tensor.describe(zeroPoint.shape)) must be one value or one per output channel "
                             + "(\(w.shape.first ?? 0))")
        }
        let perChannel = w.count / max(1, zeroPoint.count)
        let points = zeroPoint.integers()
        return w.integers().enumerated().map { $0.element - points[$0.offset / perChannel] }
    }
}
