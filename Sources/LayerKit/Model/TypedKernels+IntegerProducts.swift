import Foundation

/// ONNX's integer products: MatMulInteger and ConvInteger (int32 results),
/// QLinearMatMul and QLinearConv (requantized to int8 or uint8). Each
/// operand has its zero point subtracted and the products are summed
/// exactly in integers (wrapping to int32 at the end, as an int32
/// accumulator does), as the onnx reference and onnxruntime compute them.
/// The requantization follows the reference: the multiplier
/// `a_scale * b_scale / y_scale` in the scales' type, the product with the
/// integer sum in float64, plus the zero point, rounded half to even and
/// clamped to the output type.
///
/// The matrix geometry (numpy's batch broadcasting) is `MatMulLayer`'s; the
/// convolution's windows are `Padding.window`'s, as the float Conv resolves them.
extension TypedKernels {
    /// An integer operand less its zero point: `zeroPoint` one value, or
    /// (`rowVector`) one per row of a matrix operand given as `[M]`, or any
    /// shape that broadcasts to the operand's (`[..., M, 1]` per row,
    /// `[N]` or `[..., 1, N]` per column).
    static func centered(_ operand: TypedTensor, _ zeroPoint: TypedTensor?, name: String, rowVector: Bool = false,
                         _ node: ONNXNodeContext) throws -> [Int64] {
        let values = operand.integers()
        guard let zeroPoint, zeroPoint.count > 1 else {
            let offset = zeroPoint?.integer(at: 0) ?? 0
            return values.map { $0 - offset }
        }
        var shape = zeroPoint.shape
        if rowVector, shape.count == 1, operand.shape.count >= 2 { shape = shape + [1] }
        guard let broadcast = try? Broadcast([operand.shape, shape], node), broadcast.shape == operand.shape else {
            throw node.error("\(name) \(Tensor.describe(zeroPoint.shape)) does not fit its operand "
                             + "\(Tensor.describe(operand.shape)): give one value, or one per row or column")
        }
        return broadcast.map(values, zeroPoint.integers()) { $0 - $1 }
    }

    /// The matrix product of integer operands `a` and `b` (numpy matmul
    /// shapes), summed exactly: its shape and elements.
    static func integerProduct(_ a: [Int64], _ aShape: [Int], _ b: [Int64], _ bShape: [Int],
                               _ node: ONNXNodeContext) throws -> (shape: [Int], values: [Int64]) {
        let g = try MatMulLayer().geometry([aShape, bShape])
        _ = try ONNXFolding.checkedCount(g.output, node)
        let aOffsets = MatMulLayer.matrixOffsets(g.a, batch: g.batch), bOffsets = MatMulLayer.matrixOffsets(g.b, batch: g.batch)
        let (m, k, n) = (g.m, g.k, g.n)
        var y = [Int64](repeating: 0, count: aOffsets.count * m * n)
        for (matrix, (aBase, bBase)) in zip(aOffsets, bOffsets).enumerated() {
            let yBase = matrix * m * n
            for i in 0..<m {
                for p in 0..<k {
                    let left = a[aBase + i * k + p]
                    let row = bBase + p * n
                    for j in 0..<n { y[yBase + i * n + j] &+= left &* b[row + j] }
                }
            }
        }
        return (g.output, y)
    }

    /// Requantizes integer sums: `sum * multiplier + zero point` rounded
    /// half to even and clamped to the zero point's type (int8 or uint8),
    /// the multiplier each element's index picks.
    static func requantized(_ sums: [Int64], shape: [Int], multipliers: [Double], pick: (Int) -> Int,
                            zeroPoint i: Int, _ inputs: [TypedTensor?], _ node: ONNXNodeContext) throws -> TypedTensor {
        let zeroPoint = try input(i, inputs, node)
        let type = declaredType(i, zeroPoint, node)
        guard zeroPoint.count == 1 else {
            throw node.error("y_zero_point \(Tensor.describe(zeroPoint.shape)) must be one value")
        }
        guard type == .int8 || type == .uint8, let range = quantizedRange(type) else {
            throw node.error("y_zero_point is \(type); LayerKit requantizes to int8 and uint8")
        }
        let offset = zeroPoint.double(at: 0)
        let values = sums.indices.map { i in
            let q = (Double(Int32(truncatingIfNeeded: sums[i])) * multipliers[pick(i)] + offset).rounded(.toNearestOrEven)
            return q.isNaN ? range.lowerBound : min(max(q, range.lowerBound), range.upperBound)
        }
        return try TypedTensor(type, shape: shape, doubles: values)
    }

    /// `a_scale * b_scale / y_scale` for each of `count` positions, each
    /// step rounded to the scales' type (float16 scales multiply in float16,
    /// as numpy does): the first and last scales one value, the second one
    /// value or one per position (a weight's per-channel scale).
    static func multipliers(_ node: ONNXNodeContext, _ inputs: [TypedTensor?], scales: [(input: Int, name: String)],
                            count: Int) throws -> [Double] {
        let tensors = try scales.map { try input($0.input, inputs, node) }
        let types = zip(scales, tensors).map { declaredType($0.input, $1, node) }
        guard let type = types.first, types.allSatisfy({ $0 == type }), [.float32, .float16, .bfloat16].contains(type) else {
            throw node.error("its scales are \(types.map(\.description).joined(separator: ", ")); they must share one "
                             + "type of float32, float16 or bfloat16")
        }
        for (k, (tensor, scale)) in zip(tensors, scales).enumerated() where tensor.count != 1 && (k != 1 || tensor.count != count) {
            throw node.error("\(scale.name) \(Tensor.describe(tensor.shape)) must hold one value" + (k == 1 ? " or \(count)" : ""))
        }
        let values = tensors.map { $0.doubles() }
        func at(_ v: [Double], _ i: Int) -> Float { Float(v.count == 1 ? v[0] : v[i]) }
        var products = try rounded((0..<count).map { Double(at(values[0], $0) * at(values[1], $0)) }, to: type)
        products = try rounded((0..<count).map { Double(Float(products[$0]) / at(values[2], $0)) }, to: type)
        return products
    }

    // MARK: - MatMulInteger and QLinearMatMul

    /// MatMulInteger: A, B and their optional zero points (per tensor, A's
    /// per row, B's per column), to int32.
    static func matMulInteger(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes([])
        let a = try input(0, inputs, node), b = try input(1, inputs, node)
        let product = try integerProduct(
            centered(a, inputs.count > 2 ? inputs[2] : nil, name: "a_zero_point", rowVector: true, node), a.shape,
            centered(b, inputs.count > 3 ? inputs[3] : nil, name: "b_zero_point", node), b.shape, node)
        return [try TypedTensor(.int32, shape: product.shape, integers: product.values)]
    }

    /// QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point,
    /// y_scale, y_zero_point; the scales per tensor, or b's per column.
    static func qLinearMatMul(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes([])
        let a = try input(0, inputs, node), b = try input(3, inputs, node)
        for (i, tensor) in [(0, a), (3, b)] where !declaredType(i, tensor, node).isInteger {
            throw node.error("input \(i) is \(declaredType(i, tensor, node)); LayerKit computes QLinearMatMul on int8 and uint8")
        }
        let product = try integerProduct(centered(a, inputs[2], name: "a_zero_point", rowVector: true, node), a.shape,
                                         centered(b, inputs[5], name: "b_zero_point", node), b.shape, node)
        let n = b.shape.count >= 2 ? b.shape[b.shape.count - 1] : 1
        let multipliers = try multipliers(node, inputs, scales: [(1, "a_scale"), (4, "b_scale"), (6, "y_scale")], count: n)
        return [try requantized(product.values, shape: product.shape, multipliers: multipliers, pick: { $0 % n },
                                zeroPoint: 7, inputs, node)]
    }
}
