import Foundation
import LayerKitONNX

/// Element-wise arithmetic, comparisons and logic on two or more tensors
/// with broadcasting, the variadic reductions, PRelu and Pow with tensor
/// operands, Where, MatMul and Gemm in every form, and Cast.
extension ONNXOperators {
    static let math: [ONNXOperator] = [
        ONNXOperator("Add", through: 14, inputs: 2...2, fold: { try TypedKernels.arithmetic($0, $1, .add) }) { try binary($0, .add) },  // 7: numpy broadcasting (before, broadcast/axis); 13, 14: types
        ONNXOperator("Sub", through: 14, inputs: 2...2, fold: { try TypedKernels.arithmetic($0, $1, .sub) }) { try binary($0, .sub) },  // 7: numpy broadcasting; 13, 14: types
        ONNXOperator("Mul", through: 14, inputs: 2...2, fold: { try TypedKernels.arithmetic($0, $1, .mul) }) { try binary($0, .mul) },  // 7: numpy broadcasting; 13, 14: types
        ONNXOperator("Div", through: 14, inputs: 2...2, fold: { try TypedKernels.arithmetic($0, $1, .div) }) { try binary($0, .div) },  // 7: numpy broadcasting; 13, 14: types
        // 7: numpy broadcasting; 12, 13, 15: types
        ONNXOperator("Pow", through: 15, inputs: 2...2, fold: TypedKernels.pow, pow),
        // 13: types; 28: fmod 0 defined on floats (floor quotient; ±0, ±inf and NaN cases)
        ONNXOperator("Mod", through: 28, inputs: 2...2,
                     fold: { try TypedKernels.arithmetic($0, $1, .mod(fmod: try $0.int("fmod", default: 0) != 0)) }, mod),
        // 6: consumed_inputs dropped; 7: unidirectional broadcasting of the slope; 9, 16: types
        ONNXOperator("PRelu", through: 16, inputs: 2...2, prelu),
        ONNXOperator("Equal", through: 19, inputs: 2...2, fold: { try TypedKernels.compare($0, $1, .equal) }) { try binary($0, .equal) },  // 7: numpy broadcasting; 11, 13, 19: types (19: strings, folded)
        ONNXOperator("Less", through: 13, inputs: 2...2, fold: { try TypedKernels.compare($0, $1, .less) }) { try binary($0, .less) },  // 7: numpy broadcasting; 9, 13: types
        ONNXOperator("Greater", through: 13, inputs: 2...2, fold: { try TypedKernels.compare($0, $1, .greater) }) { try binary($0, .greater) },  // 7: numpy broadcasting; 9, 13: types
        ONNXOperator("LessOrEqual", through: 16, inputs: 2...2, fold: { try TypedKernels.compare($0, $1, .lessOrEqual) }) { try binary($0, .lessOrEqual) },  // 16: types
        ONNXOperator("GreaterOrEqual", through: 16, inputs: 2...2, fold: { try TypedKernels.compare($0, $1, .greaterOrEqual) }) { try binary($0, .greaterOrEqual) },  // 16: types
        ONNXOperator("And", through: 7, inputs: 2...2, fold: { try TypedKernels.logic($0, $1) { $0 && $1 } }) { try binary($0, .and) },  // 7: numpy broadcasting
        ONNXOperator("Or", through: 7, inputs: 2...2, fold: { try TypedKernels.logic($0, $1) { $0 || $1 } }) { try binary($0, .or) },  // 7: numpy broadcasting
        ONNXOperator("Xor", through: 7, inputs: 2...2, fold: { try TypedKernels.logic($0, $1) { $0 != $1 } }) { try binary($0, .xor) },  // 7: numpy broadcasting
        ONNXOperator("Sum", through: 13, inputs: 1...Int.max, fold: { try TypedKernels.variadic($0, $1, .add) }) { try variadic($0, .add) },  // 6: consumed_inputs dropped; 8: numpy broadcasting; 13: types
        ONNXOperator("Mean", through: 13, inputs: 1...Int.max, fold: { try TypedKernels.variadic($0, $1, .mean) }) { try variadic($0, .add, average: true) },  // 6: consumed_inputs dropped; 8: numpy broadcasting; 13: types
        ONNXOperator("Max", through: 13, inputs: 1...Int.max, fold: { try TypedKernels.variadic($0, $1, .max) }) { try variadic($0, .max) },  // 6: consumed_inputs dropped; 8: numpy broadcasting; 12, 13: types
        ONNXOperator("Min", through: 13, inputs: 1...Int.max, fold: { try TypedKernels.variadic($0, $1, .min) }) { try variadic($0, .min) },  // 6: consumed_inputs dropped; 8: numpy broadcasting; 12, 13: types
        ONNXOperator("Where", through: 16, inputs: 3...3, fold: TypedKernels.select, whereOp),  // 16: types
        ONNXOperator("MatMul", through: 13, inputs: 2...2, matMul),  // 9, 13: types
        // 6: shape inference; 7: unidirectional broadcasting of C (before, broadcast); 9: types; 11: C optional; 13: types
        ONNXOperator("Gemm", through: 13, arity: { ($0 >= 11 ? 2...3 : 3...3, 1...1) }, gemm),
        // 6: `to` a type code (before, its name); 9 to 28: types (strings, float8, float6, 4- and 2-bit in the
        // folding kernels); 19: saturate (float8); 24: round_mode (FLOAT8E8M0)
        ONNXOperator("Cast", through: 28, inputs: 1...1, fold: TypedKernels.cast, cast),
        // 19: saturate (float8); 24: round_mode (FLOAT8E8M0); others: types
        ONNXOperator("CastLike", through: 25, inputs: 2...2, fold: TypedKernels.castLike, castLike),
    ]

    // MARK: - Element-wise on two tensors

    /// A two-input op with ONNX broadcasting. A constant operand of lower
    /// rank is padded with leading 1s here, so the GPU form can read it; a
    /// computed one is broadcast by the layer (on the CPU). Before opset 7
    /// (opset 9 for the comparisons' and logic's `broadcast`), the legacy
    /// `broadcast`/`axis` attributes say how B lines up with A.
    static func binary(_ node: ONNXNodeContext, _ operation: BinaryLayer.Operation,
                       attributes: [String] = []) throws -> ConvertedNode {
        let legacy = node.opset < 7
        try node.requireAttributes(attributes + (legacy ? ["broadcast", "axis", "consumed_inputs"] : []))
        var converted = ConvertedNode(layer: BinaryLayer(operation), inputs: [0, 1])
        if legacy {
            try legacyBroadcast(node, node.shape(0), node.shape(1), into: &converted)
            return converted
        }
        try padConstants(node, ranks: [node.rank(0), node.rank(1)], into: &converted)
        return converted
    }

    /// Pads each constant input of lower rank than the output with leading
    /// 1s (a computed one stays as it is: the layer broadcasts it).
    static func padConstants(_ node: ONNXNodeContext, ranks: [Int], into converted: inout ConvertedNode) throws {
        let rank = ranks.max() ?? 0
        for (i, inputRank) in ranks.enumerated() where inputRank < rank {
            guard node.initializers[i] != nil else { continue }
            let constant = try node.constant(i, "input \(i)")
            converted.reshapedConstants[i] = try constant.reshaped(
                to: Array(repeating: 1, count: rank - constant.shape.count) + constant.shape)
        }
    }

    /// Opset < 7: without `broadcast` the shapes must be equal; with it, B's
    /// extents line up with A's from `axis` (default: the trailing axes).
    static func legacyBroadcast(_ node: ONNXNodeContext, _ a: [Int], _ b: [Int],
                                into converted: inout ConvertedNode) throws {
        guard try node.int("broadcast", default: 0) != 0 else {
            guard a == b else {
                throw node.error("inputs \(Tensor.describe(a)) and \(Tensor.describe(b)) differ and broadcast is 0 (opset \(node.opset))")
            }
            return
        }
        let axis = try node.int("axis", default: a.count - b.count)
        guard b.count <= a.count, (0...(a.count - b.count)).contains(axis),
              zip(a[axis...], b).allSatisfy({ $0 == $1 || $1 == 1 }) else {
            throw node.error("B \(Tensor.describe(b)) does not line up with A \(Tensor.describe(a)) at axis \(axis)")
        }
        let aligned = Array(repeating: 1, count: axis) + b + Array(repeating: 1, count: a.count - axis - b.count)
        guard aligned != b else { return }
        if axis == a.count - b.count, node.initializers[1] == nil { return }  // numpy's rule reads it so
        let constant = try node.constant(1, "B (broadcast at axis \(axis))")
        converted.reshapedConstants[1] = try constant.reshaped(to: aligned)
    }

    /// Pow: a constant scalar exponent is the catalog's per-element Pow (GPU
    /// in pieces, fused chains); any other exponent broadcasts as a tensor.
    static func pow(_ node: ONNXNodeContext) throws -> ConvertedNode {
        if node.opset >= 7, node.initializers[1] != nil, try node.elementCount(node.shape(1)) == 1,
           try node.rank(1) <= node.rank(0) {
            return try elementwise(node)
        }
        return try binary(node, .pow)
    }

    /// Mod: `fmod` 0 is Python's `%` (the floor quotient: a result, zero
    /// included, of the divisor's sign; Mod-28 defines it on floats with
    /// Python's special cases, NaN for a zero divisor or an infinite
    /// dividend, the dividend or the divisor for an infinite divisor), 1 is
    /// C's `fmod` (the truncated quotient, the dividend's sign).
    static func mod(_ node: ONNXNodeContext) throws -> ConvertedNode {
        let fmod = try node.int("fmod", default: 0)
        guard fmod == 0 || fmod == 1 else { throw node.error("fmod must be 0 or 1, got \(fmod)") }
        return try binary(node, fmod == 1 ? .fmod : .mod, attributes: ["fmod"])
    }

    /// PRelu: a constant slope of one value per channel is the catalog's
    /// PRelu (per-channel weights, GPU); any other slope broadcasting to X
    /// (unidirectionally: the output has X's shape) is the binary layer's.
    /// Before opset 7 the slope is one value, one per channel (axis 1) or X's
    /// shape, as PyTorch exported it then.
    static func prelu(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(node.opset < 6 ? ["consumed_inputs"] : [])
        let x = try node.shape(0)
        var slope = try node.shape(1)
        var constant = node.initializers[1] != nil ? try node.constant(1, "slope") : nil
        if node.opset < 7, slope.reduce(1, *) != 1, slope != x {
            guard slope.count == 1, x.count >= 2, slope[0] == x[1] else {
                throw node.error("slope \(Tensor.describe(slope)) is neither one value, one per channel nor X's shape "
                                 + "\(Tensor.describe(x)) (opset \(node.opset))")
            }
            slope = [x[1]] + Array(repeating: 1, count: x.count - 2)
            guard let given = constant else {
                throw node.error("a computed per-channel slope needs opset 7 or later (or a constant slope)")
            }
            constant = try given.reshaped(to: slope)
        }
        let shape: [Int]
        do { shape = try BroadcastPlan(x, slope, layer: "PRelu").shape } catch { throw node.naming(error) }
        guard shape == x else {
            throw node.error("slope \(Tensor.describe(slope)) does not broadcast to X \(Tensor.describe(x)) (the output must keep X's shape)")
        }
        if let constant, (1...4).contains(x.count), let perChannel = try? perChannel(constant, of: x, node: node) {
            let layer = try ElementwiseLayer(definition: try catalogDefinition("PRelu", node), parameters: [:])
            try layer.setWeightData([perChannel.littleEndianData])
            return ConvertedNode(layer: layer, inputs: [0])
        }
        var converted = ConvertedNode(layer: BinaryLayer(.prelu), inputs: [0, 1])
        if let constant {
            // Padded to X's rank, so the GPU form can read it.
            converted.reshapedConstants[1] = try constant.reshaped(
                to: Array(repeating: 1, count: x.count - constant.shape.count) + constant.shape)
        }
        return converted
    }

    static func catalogDefinition(_ name: String, _ node: ONNXNodeContext) throws -> OpDefinition {
        guard let definition = OpDefinition.catalog.first(where: { $0.name == name }) else {
            throw node.error("\(name) is not in the catalog")
        }
        return definition
    }

    // MARK: - Variadic

    /// Sum, Mean, Max, Min of one or more inputs, broadcast together.
    static func variadic(_ node: ONNXNodeContext, _ operation: BinaryLayer.Operation,
                         average: Bool = false) throws -> ConvertedNode {
        try node.requireAttributes(node.opset < 6 ? ["consumed_inputs"] : [])
        let indices = Array(node.node.inputs.indices)
        guard indices.allSatisfy(node.has) else { throw node.error("an input is omitted (empty name)") }
        let layer = try BinaryLayer(operation, inputCount: indices.count, average: average, name: node.node.opType)
        var converted = ConvertedNode(layer: layer, inputs: indices)
        try padConstants(node, ranks: indices.map { try node.rank($0) }, into: &converted)
        return converted
    }

    // MARK: - Where

    static func whereOp(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes([])
        return ConvertedNode(layer: WhereLayer(), inputs: [0, 1, 2])
    }

    // MARK: - Matrix products

    /// MatMul: a 2-D product with a constant B is the `Gemm` layer (GPU
    /// form); every other (any ranks, computed B) is `MatMulLayer` (CPU).
    static func matMul(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes([])
        if try node.rank(0) == 2, try node.rank(1) == 2, node.initializers[1] != nil {
            return ConvertedNode(layer: try Gemm(b: node.constant(1, "B"), name: "MatMul"), inputs: [0])
        }
        return ConvertedNode(layer: MatMulLayer(), inputs: [0, 1])
    }

    /// Gemm: constant B and C (or none) make the `Gemm` layer (GPU form when
    /// A is not transposed and C is per column); computed ones `MatMulLayer`.
    /// Before opset 7, `broadcast` 0 requires C of shape [M, N].
    static func gemm(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["alpha", "beta", "transA", "transB"] + (node.opset < 7 ? ["broadcast"] : []))
        let (transA, transB) = (try node.int("transA", default: 0) != 0, try node.int("transB", default: 0) != 0)
        let (alpha, beta) = (try node.float("alpha", default: 1), try node.float("beta", default: 1))
        let hasC = node.has(2)
        // Ranks only where that is enough, so one Gemm layer (B' transposed and
        // packed) serves every row count: a sequence length, a batch size.
        guard try node.rank(0) == 2, try node.rank(1) == 2 else {
            throw node.error("A and B must be matrices, got \(Tensor.describe(try node.shape(0))) and "
                             + "\(Tensor.describe(try node.shape(1)))")
        }
        if hasC, node.opset < 7, try node.int("broadcast", default: 0) == 0 {
            let (a, b) = (try node.shape(0), try node.shape(1))
            let expected = [transA ? a[1] : a[0], transB ? b[0] : b[1]]
            guard try node.shape(2) == expected else {
                throw node.error("C \(Tensor.describe(try node.shape(2))) must be [M, N] = \(Tensor.describe(expected)) "
                                 + "with broadcast 0 (opset \(node.opset))")
            }
        }
        if node.initializers[1] != nil, !hasC || node.initializers[2] != nil,
           let layer = try? Gemm(b: node.constant(1, "B"), c: node.optionalConstant(2, "C"), alpha: alpha, beta: beta,
                                 transA: transA, transB: transB),
           layer.fitsEveryRowCount || (try? layer.outputShapes(forInputShapes: [node.shape(0)])) != nil {
            return ConvertedNode(layer: layer, inputs: [0])
        }
        let layer = try MatMulLayer(transA: transA, transB: transB, alpha: alpha, beta: beta, hasC: hasC)
        return ConvertedNode(layer: layer, inputs: hasC ? [0, 1, 2] : [0, 1])
    }

    // MARK: - Cast

    /// Cast of a float tensor (LayerKit's runtime tensors are float): to a
    /// float type the values pass through; to an integer type they are
    /// truncated toward zero (out-of-range values are not wrapped); to BOOL
    /// they become `x != 0` (NaN is true).
    static func cast(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["to", "saturate", "round_mode"])
        guard let to = try node.node.int("to") else { throw node.error("attribute 'to' is required") }
        return try castLayer(to: ONNXDataType(rawValue: to), node)
    }

    /// CastLike: Cast to the element type of its second input, of which only
    /// the type is read: a constant's, or a graph input's declared type
    /// (`ONNXNodeContext.inputTypes`; LayerKit does not track the types of
    /// values computed at run time).
    static func castLike(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["saturate", "round_mode"])
        guard node.has(1), let target = TypedKernels.targetType(of: node) else {
            throw node.error("the element type of target_type (input 1) is unknown: LayerKit knows the types of "
                             + "constants and graph inputs, not of values computed at run time")
        }
        return try castLayer(to: ONNXDataType(rawValue: target.rawValue), node)
    }

    /// The truncation and truth formulas of Cast, as per-element layers.
    static let castToInteger = "where(x < 0, ceil(x), floor(x))"
    static let castToBool = "x != 0"

    static func castLayer(to type: ONNXDataType, _ node: ONNXNodeContext) throws -> ConvertedNode {
        switch type.rawValue {
        case 1, 10, 11, 16:  // FLOAT, FLOAT16, DOUBLE, BFLOAT16: float values pass through
            return ConvertedNode(layer: nil, inputs: [0])
        case 2, 3, 4, 5, 6, 7, 12, 13:  // the integer types
            return ConvertedNode(layer: try FormulaLayer(formula: castToInteger, name: "Cast"), inputs: [0])
        case 9:  // BOOL
            return ConvertedNode(layer: try FormulaLayer(formula: castToBool, name: "Cast"), inputs: [0])
        default:
            // The folding kernels cast to every type: the input's value is asked for at prepare.
            if node.has(0), node.initializers[0] == nil { node.requests?.record(node.node.inputs[0]) }
            throw node.error("Cast to \(type) is not supported (LayerKit casts to float, integer and BOOL types)")
        }
    }
}
