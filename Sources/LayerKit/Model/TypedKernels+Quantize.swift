import Foundation

/// ONNX's linear quantization: QuantizeLinear, DequantizeLinear and
/// DynamicQuantizeLinear, exactly as the onnx reference computes them
/// (`onnx/reference/ops/op_quantize_linear.py` and its siblings).
///
/// - QuantizeLinear: `y = saturate(round(x / y_scale) + y_zero_point)`, the
///   quotient rounded half to even and clamped to the output type's range;
///   to a float8/6/4 type, `x / y_scale + y_zero_point` rounded to the type
///   (`saturate` for float8). NaN saturates to the type's minimum, as the
///   reference's cast of NaN to int32 does.
/// - DequantizeLinear: `y = (x - x_zero_point) * x_scale`, the difference
///   exact and the product rounded once to float32, then to the output type.
/// - The scale (and zero point) is per tensor (one element), per axis (a 1-D
///   scale along `axis`) or blocked (`block_size` elements of `axis` per
///   scale): `QuantizationGrid`.
///
/// A value a float layer computed arrives as float32 holding its type's
/// values exactly (an int8 tensor, a float8 one); what the model declares
/// of it (`declaredType`) decides how it is read.
extension TypedKernels {
    /// Where each element of x finds its scale and zero point.
    struct QuantizationGrid {
        enum Kind { case tensor, axis, blocked }
        let kind: Kind
        /// The extents of x after the quantization axis, multiplied.
        let inner: Int
        /// x's extent along the axis, the scale's, and the block size (1 per axis).
        let axisExtent: Int
        let scaleExtent: Int
        let blockSize: Int

        /// The scale's index for element `i` of x (row-major).
        func scaleIndex(_ i: Int) -> Int {
            switch kind {
            case .tensor: return 0
            case .axis: return i / inner % axisExtent
            case .blocked:
                let (outer, rest) = i.quotientAndRemainder(dividingBy: axisExtent * inner)
                let (position, n) = rest.quotientAndRemainder(dividingBy: inner)
                return (outer * scaleExtent + position / blockSize) * inner + n
            }
        }
    }

    /// The grid of a scale of `scale`'s shape (and a zero point of
    /// `zeroPoint`'s, which must match it) over x of shape `x`, by the
    /// node's `axis` and `block_size`; errors name the node.
    static func quantizationGrid(_ node: ONNXNodeContext, x: [Int], scale: [Int], zeroPoint: [Int]?,
                                 names: (scale: String, zeroPoint: String)) throws -> QuantizationGrid {
        let scaleCount = scale.reduce(1, *)
        if let zeroPoint, zeroPoint.reduce(1, *) != scaleCount || (scaleCount != 1 && zeroPoint != scale) {
            throw node.error("\(names.zeroPoint) \(Tensor.describe(zeroPoint)) must have the shape of \(names.scale) "
                             + "\(Tensor.describe(scale))")
        }
        let blockSize = try node.int("block_size", default: 0)
        guard blockSize >= 0 else { throw node.error("block_size \(blockSize) must be >= 0") }
        if scaleCount == 1 { return QuantizationGrid(kind: .tensor, inner: 1, axisExtent: 1, scaleExtent: 1, blockSize: 1) }
        guard node.opset >= 13 else {
            throw node.error("\(names.scale) \(Tensor.describe(scale)) must be a scalar at opset \(node.opset) "
                             + "(per-axis scales came at opset 13)")
        }
        let axis = try node.axis(try node.int("axis", default: 1), rank: x.count)
        let inner = x[(axis + 1)...].reduce(1, *)
        if blockSize == 0 {
            guard scale.count == 1, scale[0] == x[axis] else {
                throw node.error("\(names.scale) \(Tensor.describe(scale)) is neither one value nor one per element of "
                                 + "axis \(axis) of x \(Tensor.describe(x)) (\(x[axis]) values); a blocked scale needs block_size")
            }
            return QuantizationGrid(kind: .axis, inner: inner, axisExtent: x[axis], scaleExtent: x[axis], blockSize: 1)
        }
        let blocks = (x[axis] + blockSize - 1) / blockSize
        let expected = x.enumerated().map { $0.offset == axis ? blocks : $0.element }
        guard scale == expected else {
            throw node.error("block_size \(blockSize) along axis \(axis) of x \(Tensor.describe(x)) needs \(names.scale) "
                             + "\(Tensor.describe(expected)), got \(Tensor.describe(scale))")
        }
        return QuantizationGrid(kind: .blocked, inner: inner, axisExtent: x[axis], scaleExtent: blocks, blockSize: blockSize)
    }

    /// The element type input `i` holds as the model declares it: a float32
    /// value of the run may carry another type's values exactly (an int8
    /// tensor that a float layer computed), and that type decides how the
    /// op reads it.
    static func declaredType(_ i: Int, _ tensor: TypedTensor, _ node: ONNXNodeContext) -> ElementType {
        guard tensor.elementType == .float32, i < node.inputTypes.count, let declared = node.inputTypes[i] else {
            return tensor.elementType
        }
        return declared
    }

    /// The clamping range of an integer quantized type.
    static func quantizedRange(_ type: ElementType) -> ClosedRange<Double>? {
        guard let bits = type.integerBits, type != .bool else { return nil }
        return type.isSigned ? -Double(1 << (bits - 1))...Double((1 << (bits - 1)) - 1) : 0...Double((1 << bits) - 1)
    }

    /// The types QuantizeLinear makes (ONNX's `_QUANT_TYPES`).
    static let quantizedTypes: Set<ElementType> = [
        .uint8, .int8, .uint16, .int16, .uint4, .int4, .uint2, .int2,
        .float8e4m3fn, .float8e4m3fnuz, .float8e5m2, .float8e5m2fnuz, .float4e2m1, .float6e2m3, .float6e3m2,
    ]

    /// QuantizeLinear's output type: `output_dtype`, or the zero point's
    /// declared type (the two must agree), else uint8.
    static func quantizedType(_ node: ONNXNodeContext, zeroPoint: ElementType?) throws -> ElementType {
        let code = try node.int("output_dtype", default: 0)
        let given = code == 0 ? nil : ElementType(rawValue: code)
        if code != 0, given == nil { throw node.error("output_dtype \(code) is not an ONNX element type") }
        if let given, let zeroPoint, given != zeroPoint {
            throw node.error("output_dtype \(given) is not y_zero_point's type \(zeroPoint)")
        }
        let type = zeroPoint ?? given ?? .uint8
        guard quantizedTypes.contains(type) else {
            throw node.error("quantizes to \(type); ONNX quantizes to "
                             + quantizedTypes.map(\.description).sorted().joined(separator: ", "))
        }
        return type
    }

    /// `values` rounded to the float type `type` (float16, bfloat16...), as Doubles.
    static func rounded(_ values: [Double], to type: ElementType) throws -> [Double] {
        try TypedTensor(type, shape: [values.count], doubles: values).doubles()
    }

    /// Whether `type` is a float of at most 32 bits that LayerKit divides in Float.
    private static func dividesInFloat(_ type: ElementType) -> Bool { type.isFloatingPoint && type != .float64 }

    /// x / scale per element of x, in the precision the reference divides
    /// in: the `precision` attribute's type; else numpy's promotion of the
    /// two types (float16 by float16 in float16, an int32 operand in
    /// float64, otherwise float32).
    private static func quotients(_ node: ONNXNodeContext, _ x: TypedTensor, xType: ElementType, _ scales: [Double],
                                  scaleType: ElementType, _ grid: QuantizationGrid) throws -> [Double] {
        let values = x.doubles()
        let precisionCode = try node.int("precision", default: 0)
        if precisionCode != 0 {
            guard let precision = ElementType(rawValue: precisionCode), [.float32, .float16, .bfloat16].contains(precision) else {
                throw node.error("precision \(precisionCode) is not float32, float16 or bfloat16")
            }
            let (xs, ss) = (try rounded(values, to: precision), try rounded(scales, to: precision))
            let divided = xs.indices.map { Double(Float(xs[$0]) / Float(ss[grid.scaleIndex($0)])) }
            return try rounded(divided, to: precision)
        }
        guard dividesInFloat(xType), dividesInFloat(scaleType) else {
            return values.indices.map { values[$0] / scales[grid.scaleIndex($0)] }
        }
        let divided = values.indices.map { Double(Float(values[$0]) / Float(scales[grid.scaleIndex($0)])) }
        let narrow = xType == scaleType && (xType == .float16 || xType == .bfloat16)
        return narrow ? try rounded(divided, to: xType) : divided
    }

    /// Throws unless every attribute of the node is one its version has at
    /// the node's opset (`since`: each attribute and the opset that brought it).
    private static func requireAttributes(_ node: ONNXNodeContext, since: [(opset: Int, name: String)]) throws {
        try node.requireAttributes(since.filter { node.opset >= $0.opset }.map(\.name))
    }

    /// QuantizeLinear: x, y_scale and the optional y_zero_point.
    static func quantizeLinear(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try requireAttributes(node, since: [(13, "axis"), (19, "saturate"), (21, "block_size"), (21, "output_dtype"),
                                            (23, "precision")])
        let x = try input(0, inputs, node), scale = try input(1, inputs, node)
        let zeroPoint = inputs.count > 2 ? inputs[2] : nil
        let (xType, scaleType) = (declaredType(0, x, node), declaredType(1, scale, node))
        guard scaleType.isFloatingPoint || scaleType == .int32 else {
            throw node.error("y_scale is \(scaleType); it must be a float type or int32")
        }
        let type = try quantizedType(node, zeroPoint: zeroPoint.map { declaredType(2, $0, node) })
        let grid = try quantizationGrid(node, x: x.shape, scale: scale.shape, zeroPoint: zeroPoint?.shape,
                                        names: ("y_scale", "y_zero_point"))
        let zeroPoints = zeroPoint?.doubles()
        let saturate = try node.int("saturate", default: 1) != 0
        let quotients = try quotients(node, x, xType: xType, scale.doubles(), scaleType: scaleType, grid)
        let range = quantizedRange(type)
        let values = quotients.indices.map { i in
            let offset = zeroPoints?[grid.scaleIndex(i)] ?? 0
            guard let range else { return quotients[i] + offset }
            let q = quotients[i].rounded(.toNearestOrEven) + offset
            return q.isNaN ? range.lowerBound : min(max(q, range.lowerBound), range.upperBound)
        }
        // Only the float8 types have a non-saturating form; float4 and float6 have no infinity.
        let float8: Set<ElementType> = [.float8e4m3fn, .float8e4m3fnuz, .float8e5m2, .float8e5m2fnuz]
        return [try TypedTensor(type, shape: x.shape, doubles: values, saturate: saturate || !float8.contains(type))]
    }

    /// DequantizeLinear: x, x_scale and the optional x_zero_point.
    static func dequantizeLinear(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try requireAttributes(node, since: [(13, "axis"), (21, "block_size"), (23, "output_dtype")])
        let x = try input(0, inputs, node), scale = try input(1, inputs, node)
        let zeroPoint = inputs.count > 2 ? inputs[2] : nil
        let scaleType = declaredType(1, scale, node)
        let code = try node.int("output_dtype", default: 0)
        let type = code == 0 ? scaleType : ElementType(rawValue: code)
        guard let type, [.float32, .float16, .bfloat16].contains(type) else {
            throw node.error(code == 0 ? "x_scale is \(scaleType); without output_dtype it must be float32, float16 or bfloat16"
                                       : "output_dtype \(code) is not float32, float16 or bfloat16")
        }
        let grid = try quantizationGrid(node, x: x.shape, scale: scale.shape, zeroPoint: zeroPoint?.shape,
                                        names: ("x_scale", "x_zero_point"))
        let (values, scales, zeroPoints) = (x.doubles(), scale.doubles(), zeroPoint?.doubles())
        // The difference is exact in Double; the product is rounded once to float32, as the reference computes it.
        let products = values.indices.map { i in
            let k = grid.scaleIndex(i)
            return Double(Float((values[i] - (zeroPoints?[k] ?? 0)) * scales[k]))
        }
        return [try TypedTensor(type, shape: x.shape, doubles: products)]
    }

    /// DynamicQuantizeLinear: x (float32) to uint8 over the range of its
    /// values and 0, with the scale and zero point it chose, in float32 as
    /// the reference computes them.
    static func dynamicQuantizeLinear(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes([])
        let x = try input(0, inputs, node)
        let values = x.doubles().map { Float($0) }
        let high = max(0, values.max() ?? 0), low = min(0, values.min() ?? 0)
        let scale = (high == low ? 1 : high - low) / 255
        let zeroPoint = min(255, max(0, 0 - low / scale)).rounded(.toNearestOrEven)
        let quantized = values.map { v -> Double in
            let q = (v / scale).rounded(.toNearestOrEven) + zeroPoint
            return q.isNaN ? 0 : Double(min(255, max(0, q)))
        }
        return [try TypedTensor(.uint8, shape: x.shape, doubles: quantized),
                try TypedTensor(.float32, shape: [], doubles: [Double(scale)]),
                try TypedTensor(.uint8, shape: [], doubles: [Double(zeroPoint)])]
    }
}
