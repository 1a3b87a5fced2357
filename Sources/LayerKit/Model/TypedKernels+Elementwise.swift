import Foundation
import LayerKitONNX

/// Element-wise ops with numpy broadcasting: arithmetic, comparisons, logic,
/// bitwise ops, the unary math of the float types, Where and integer Clip.
/// Each op's declaration (`ONNXOperator.fold`) names its kernel here.
extension TypedKernels {
    /// Not of booleans (any type's truth).
    static func not(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let x = try input(0, inputs, node)
        return [try Lanes.bool(truth(x).map { !$0 }).tensor(.bool, shape: x.shape)]
    }

    /// BitwiseNot of an integer type.
    static func bitwiseNot(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let x = try input(0, inputs, node)
        guard x.elementType.isInteger, x.elementType != .bool else { return nil }
        // Complementing the sign-extended (or zero-extended) word, then wrapping, is the type's own NOT.
        return [try TypedTensor(x.elementType, shape: x.shape, integers: x.integers().map { ~$0 })]
    }

    /// IsNaN of a float type.
    static func isNaN(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let x = try input(0, inputs, node)
        guard x.elementType.isFloatingPoint else { return nil }
        return [try Lanes.bool(x.doubles().map(\.isNaN)).tensor(.bool, shape: x.shape)]
    }

    /// IsInf of a float type, with `detect_positive` and `detect_negative`.
    static func isInf(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let x = try input(0, inputs, node)
        guard x.elementType.isFloatingPoint else { return nil }
        let positive = try node.int("detect_positive", default: 1) != 0
        let negative = try node.int("detect_negative", default: 1) != 0
        let flags = x.doubles().map { $0.isInfinite && ($0 > 0 ? positive : negative) }
        return [try Lanes.bool(flags).tensor(.bool, shape: x.shape)]
    }

    /// The truth of each element: booleans as they are, other values `!= 0` (NaN is true).
    static func truth(_ tensor: TypedTensor) -> [Bool] {
        // A bool is one byte, 0 or 1: read straight (decoding each as an
        // integer was half the time of BERT's mask Where).
        if tensor.elementType == .bool { return tensor.bytes.map { $0 != 0 } }
        return tensor.elementType.isInteger ? tensor.integers().map { $0 != 0 } : tensor.doubles().map { $0 != 0 }
    }

    /// The two inputs of a binary op, brought to one type; nil before opset 7
    /// when the node has the legacy `broadcast` attribute (its layer folds it).
    private static func pair(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        if node.opset < 7, node.node.attributes["broadcast"] != nil { return nil }
        return try sameType([input(0, inputs, node), input(1, inputs, node)], node)
    }

    // MARK: - Arithmetic

    enum Arithmetic {
        case add, sub, mul, div
        /// fmod: C's fmod (the dividend's sign); without, Python's % (the divisor's sign), on floats too (Mod-28).
        case mod(fmod: Bool)

        var name: String {
            switch self {
            case .add: "Add"
            case .sub: "Sub"
            case .mul: "Mul"
            case .div: "Div"
            case .mod: "Mod"
            }
        }

        /// The op on signed integers: wrapping (the result is wrapped to the
        /// type's width when stored), checked for int64.
        func signed(_ checked: Bool, _ node: ONNXNodeContext) -> (Int64, Int64) throws -> Int64 {
            func guarded(_ f: @escaping (Int64, Int64) -> (partialValue: Int64, overflow: Bool)) -> (Int64, Int64) throws -> Int64 {
                { a, b in
                    let (value, overflowed) = f(a, b)
                    if overflowed && checked { throw TypedKernels.overflow(name) }
                    return value
                }
            }
            switch self {
            case .add: return guarded { $0.addingReportingOverflow($1) }
            case .sub: return guarded { $0.subtractingReportingOverflow($1) }
            case .mul: return guarded { $0.multipliedReportingOverflow(by: $1) }
            case .div:
                // Truncates toward zero, as C; Int64.min / -1 overflows (only int64 reaches it).
                let divide = guarded { $0.dividedReportingOverflow(by: $1) }
                return { a, b in
                    guard b != 0 else { throw node.error("integer division by zero") }
                    return try divide(a, b)
                }
            case .mod(let fmod):
                return { a, b in
                    guard b != 0 else { throw node.error("integer Mod by zero") }
                    let r = a.remainderReportingOverflow(dividingBy: b).partialValue
                    // |r| < |b| and opposite signs: r + b cannot overflow.
                    return !fmod && r != 0 && (r < 0) != (b < 0) ? r + b : r
                }
            }
        }

        /// The op on unsigned integers, wrapping.
        func unsigned(_ node: ONNXNodeContext) -> (UInt64, UInt64) throws -> UInt64 {
            switch self {
            case .add: return { $0 &+ $1 }
            case .sub: return { $0 &- $1 }
            case .mul: return { $0 &* $1 }
            case .div: return { a, b in
                guard b != 0 else { throw node.error("integer division by zero") }
                return a / b
            }
            case .mod: return { a, b in
                guard b != 0 else { throw node.error("integer Mod by zero") }
                return a % b
            }
            }
        }

        /// The op on a float type (Float or Double arithmetic).
        func float<T: BinaryFloatingPoint>(_ node: ONNXNodeContext) throws -> (T, T) -> T {
            switch self {
            case .add: return { $0 + $1 }
            case .sub: return { $0 - $1 }
            case .mul: return { $0 * $1 }
            case .div: return { $0 / $1 }
            case .mod(let fmod):
                if fmod { return { $0.truncatingRemainder(dividingBy: $1) } }
                // fmod 0, defined on floats by Mod-28: the floor remainder (Python's %), a zero of the
                // divisor's sign; NaN, infinite dividends and infinite divisors as the layer's lk_imod.
                return { a, b in
                    let r = a.truncatingRemainder(dividingBy: b)
                    if r == 0 { return T(signOf: b, magnitudeOf: 0) }
                    return (r < 0) != (b < 0) ? r + b : r
                }
            }
        }
    }

    static func arithmetic(_ node: ONNXNodeContext, _ inputs: [TypedTensor?], _ op: Arithmetic) throws -> [TypedTensor]? {
        guard let operands = try pair(node, inputs) else { return nil }
        let type = operands[0].elementType
        let plan = try Broadcast(operands.map(\.shape), node)
        let result: Lanes
        switch (Lanes(operands[0]), Lanes(operands[1])) {
        case (.signed(let a), .signed(let b)): result = .signed(try plan.map(a, b, op.signed(isChecked(type), node)))
        case (.unsigned(let a), .unsigned(let b)): result = .unsigned(try plan.map(a, b, op.unsigned(node)))
        case (.float(let a), .float(let b)): result = .float(plan.map(a, b, try op.float(node)))
        case (.double(let a), .double(let b)): result = .double(plan.map(a, b, try op.float(node)))
        default: return nil  // bool, string: no arithmetic
        }
        return [try result.tensor(type, shape: plan.shape)]
    }

    /// Pow: the result has the base's type; the exponent may be of another
    /// numeric type. Integer bases with integer exponents are exact
    /// (repeated squaring, wrapping; checked for int64).
    static func pow(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let (base, exponent) = (try input(0, inputs, node), try input(1, inputs, node))
        guard base.elementType != .bool, base.elementType != .string, exponent.elementType != .string else { return nil }
        let type = base.elementType
        let plan = try Broadcast([base.shape, exponent.shape], node)
        let result: Lanes
        switch Lanes(base) {
        case .float(let b):
            result = .float(plan.map(b, exponent.doubles().map { Float($0) }) { Foundation.pow($0, $1) })
        case .double(let b): result = .double(plan.map(b, exponent.doubles()) { Foundation.pow($0, $1) })
        case .signed, .unsigned:
            let b = base.integers()
            if exponent.elementType.isInteger {
                let checked = isChecked(type)
                let e = exponent.elementType == .uint64 ? exponent.integers().map { $0 < 0 ? .max : $0 } : exponent.integers()
                result = .signed(try plan.map(b, e) { try integerPower($0, $1, checked: checked, node) })
            } else {
                // A float exponent: pow in Double, truncated toward zero (C's conversion).
                let values = plan.map(base.doubles(), exponent.doubles()) { Foundation.pow($0, $1) }
                return [try TypedTensor(type, shape: plan.shape, doubles: values)]
            }
        default: return nil
        }
        return [try result.tensor(type, shape: plan.shape)]
    }

    /// `base` to the integer power `exponent`: wrapping (or checked)
    /// products; a negative power truncates 1/base^n toward zero.
    private static func integerPower(_ base: Int64, _ exponent: Int64, checked: Bool, _ node: ONNXNodeContext) throws -> Int64 {
        if exponent < 0 {
            switch base {
            case 1: return 1
            case -1: return exponent & 1 == 0 ? 1 : -1
            case 0: throw node.error("0 to the negative power \(exponent)")
            default: return 0
            }
        }
        var (result, square, e) = (Int64(1), base, exponent)
        while e > 0 {
            if e & 1 == 1 {
                let (product, overflowed) = result.multipliedReportingOverflow(by: square)
                if overflowed && checked { throw overflow("Pow") }
                result = product
            }
            e >>= 1
            if e > 0 {
                let (product, overflowed) = square.multipliedReportingOverflow(by: square)
                // The square is only used if a higher bit is set.
                if overflowed && checked && e > 0 { throw overflow("Pow") }
                square = product
            }
        }
        return result
    }

    // MARK: - Variadic

    enum Variadic { case add, mean, max, min }

    static func variadic(_ node: ONNXNodeContext, _ inputs: [TypedTensor?], _ op: Variadic) throws -> [TypedTensor]? {
        let given = try sameType(inputs.compactMap { $0 }, node)
        guard let type = given.first?.elementType else { throw node.error("takes at least one input") }
        let plan = try Broadcast(given.map(\.shape), node)
        let lanes = given.map(Lanes.init)
        let result: Lanes
        switch op {
        case .add, .mean:
            switch type {
            case _ where type.isFloatingPoint:
                if case .double = lanes[0] {
                    var sums = plan.fold(lanes.map(doubles)) { $0 + $1 }
                    if op == .mean { sums = sums.map { $0 / Double(given.count) } }
                    result = .double(sums)
                } else {
                    var sums = plan.fold(lanes.map(floats)) { $0 + $1 }
                    if op == .mean { sums = sums.map { $0 / Float(given.count) } }
                    result = .float(sums)
                }
            case _ where op == .mean || type == .bool || type == .string: return nil
            case _ where type.isSigned:
                let add = Arithmetic.add.signed(isChecked(type), node)
                result = .signed(try plan.fold(given.map { $0.integers() }, add))
            default:
                result = .unsigned(plan.fold(given.map { $0.integers().map { UInt64(bitPattern: $0) } }) { $0 &+ $1 })
            }
        case .max, .min:
            let larger = op == .max
            switch lanes[0] {
            case .signed: result = .signed(plan.fold(given.map { $0.integers() }) { larger ? Swift.max($0, $1) : Swift.min($0, $1) })
            case .unsigned:
                result = .unsigned(plan.fold(given.map { $0.integers().map { UInt64(bitPattern: $0) } }) {
                    larger ? Swift.max($0, $1) : Swift.min($0, $1)
                })
            // NaN propagates (numpy's maximum, onnxruntime's Max since opset 12).
            case .float: result = .float(plan.fold(lanes.map(floats)) { $0.isNaN || $1.isNaN ? .nan : larger ? Swift.max($0, $1) : Swift.min($0, $1) })
            case .double: result = .double(plan.fold(lanes.map(doubles)) { $0.isNaN || $1.isNaN ? .nan : larger ? Swift.max($0, $1) : Swift.min($0, $1) })
            case .bool, .string: return nil
            }
        }
        return [try result.tensor(type, shape: plan.shape)]
    }

    private static func floats(_ lanes: Lanes) -> [Float] { if case .float(let v) = lanes { v } else { [] } }
    private static func doubles(_ lanes: Lanes) -> [Double] { if case .double(let v) = lanes { v } else { [] } }

    // MARK: - Comparisons and logic

    enum Comparison {
        case equal, less, lessOrEqual, greater, greaterOrEqual

        func callAsFunction<T: Comparable>(_ a: T, _ b: T) -> Bool {
            switch self {
            case .equal: a == b
            case .less: a < b
            case .lessOrEqual: a <= b
            case .greater: a > b
            case .greaterOrEqual: a >= b
            }
        }
    }

    /// A comparison in the operands' own type (unsigned as unsigned, floats
    /// IEEE: NaN compares false); the output is bool.
    static func compare(_ node: ONNXNodeContext, _ inputs: [TypedTensor?], _ test: Comparison) throws -> [TypedTensor]? {
        guard let operands = try pair(node, inputs) else { return nil }
        let plan = try Broadcast(operands.map(\.shape), node)
        let result: [Bool]
        switch (Lanes(operands[0]), Lanes(operands[1])) {
        case (.signed(let a), .signed(let b)): result = plan.map(a, b, test.callAsFunction)
        case (.unsigned(let a), .unsigned(let b)): result = plan.map(a, b, test.callAsFunction)
        case (.float(let a), .float(let b)): result = plan.map(a, b, test.callAsFunction)
        case (.double(let a), .double(let b)): result = plan.map(a, b, test.callAsFunction)
        case (.string(let a), .string(let b)): result = plan.map(a, b, test.callAsFunction)
        case (.bool(let a), .bool(let b)): result = plan.map(a.map { $0 ? 1 : 0 }, b.map { $0 ? 1 : 0 }) { test($0 as Int, $1) }
        default: return nil
        }
        return [try Lanes.bool(result).tensor(.bool, shape: plan.shape)]
    }

    /// And, Or, Xor on the operands' truth.
    static func logic(_ node: ONNXNodeContext, _ inputs: [TypedTensor?], _ f: @escaping (Bool, Bool) -> Bool) throws -> [TypedTensor]? {
        let (a, b) = (try input(0, inputs, node), try input(1, inputs, node))
        if node.opset < 7, node.node.attributes["broadcast"] != nil { return nil }
        let plan = try Broadcast([a.shape, b.shape], node)
        return [try Lanes.bool(plan.map(truth(a), truth(b), f)).tensor(.bool, shape: plan.shape)]
    }

    /// BitwiseAnd/Or/Xor on integer words: on the sign-extended words, then
    /// wrapped, these are the type's own.
    static func bitwise(_ node: ONNXNodeContext, _ inputs: [TypedTensor?], _ f: @escaping (Int64, Int64) -> Int64) throws -> [TypedTensor]? {
        guard let operands = try pair(node, inputs), operands[0].elementType.isInteger, operands[0].elementType != .bool else { return nil }
        let plan = try Broadcast(operands.map(\.shape), node)
        return [try TypedTensor(operands[0].elementType, shape: plan.shape, integers: plan.map(operands[0].integers(), operands[1].integers(), f))]
    }

    /// BitShift (unsigned types): a shift of the width or more gives 0.
    static func bitShift(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        guard let operands = try pair(node, inputs) else { return nil }
        let direction = try node.string("direction", default: "")
        guard direction == "LEFT" || direction == "RIGHT" else {
            throw node.error("attribute 'direction' must be LEFT or RIGHT, got '\(direction)'")
        }
        let left = direction == "LEFT"
        let plan = try Broadcast(operands.map(\.shape), node)
        let type = operands[0].elementType
        switch (Lanes(operands[0]), Lanes(operands[1])) {
        case (.unsigned(let x), .unsigned(let y)):
            let shifted = plan.map(x, y) { value, shift in shift >= 64 ? 0 : left ? value << shift : value >> shift }
            return [try Lanes.unsigned(shifted).tensor(type, shape: plan.shape)]
        case (.signed(let x), .signed(let y)):
            // Opset 28's signed shifts: arithmetic to the right; a shift past the
            // width (or negative) leaves only the sign's fill: -1 right of a negative, else 0.
            let width = Int64(type.integerBits ?? 64)
            let shifted = plan.map(x, y) { value, shift -> Int64 in
                guard shift >= 0, shift < width else { return !left && value < 0 ? -1 : 0 }
                return left ? value << shift : value >> shift
            }
            return [try Lanes.signed(shifted).tensor(type, shape: plan.shape)]
        default: return nil
        }
    }

    // MARK: - Unary

    enum Unary {
        case neg, abs, sign
        /// A float-only op, in Float and in Double.
        case float((Float) -> Float, (Double) -> Double)
    }

    static func unary(_ node: ONNXNodeContext, _ inputs: [TypedTensor?], _ op: Unary) throws -> [TypedTensor]? {
        let x = try input(0, inputs, node)
        let type = x.elementType
        let result: Lanes
        switch (Lanes(x), op) {
        case (.float(let v), .float(let f, _)): result = .float(v.map(f))
        case (.double(let v), .float(_, let f)): result = .double(v.map(f))
        case (_, .float): return nil
        case (.float(let v), .neg): result = .float(v.map { -$0 })
        case (.double(let v), .neg): result = .double(v.map { -$0 })
        case (.float(let v), .abs): result = .float(v.map(Swift.abs))
        case (.double(let v), .abs): result = .double(v.map(Swift.abs))
        case (.float(let v), .sign): result = .float(v.map { $0 > 0 ? 1 : $0 < 0 ? -1 : $0.isNaN ? .nan : 0 })
        case (.double(let v), .sign): result = .double(v.map { $0 > 0 ? 1 : $0 < 0 ? -1 : $0.isNaN ? .nan : 0 })
        case (.signed(let v), .neg):
            let checked = isChecked(type)
            result = .signed(try v.map { value in
                if value == .min && checked { throw overflow("Neg") }
                return 0 &- value
            })
        case (.signed(let v), .abs):
            let checked = isChecked(type)
            result = .signed(try v.map { value in
                if value == .min && checked { throw overflow("Abs") }
                return value < 0 ? 0 &- value : value
            })
        case (.signed(let v), .sign): result = .signed(v.map { $0.signum() })
        case (.unsigned(let v), .neg): result = .unsigned(v.map { 0 &- $0 })
        case (.unsigned(let v), .abs): result = .unsigned(v)
        case (.unsigned(let v), .sign): result = .unsigned(v.map { $0 == 0 ? 0 : 1 })
        default: return nil
        }
        return [try result.tensor(type, shape: x.shape)]
    }

    // MARK: - Where and Clip

    /// Where: X or Y by the condition's truth, with broadcasting; X and Y
    /// of any one type (the elements are moved, not converted).
    static func select(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let condition = try input(0, inputs, node)
        let values = try sameType([input(1, inputs, node), input(2, inputs, node)], node)
        let plan = try Broadcast([condition.shape, values[0].shape, values[1].shape], node)
        let truth = truth(condition)
        let sources = (0..<plan.count).map { i in
            truth[plan.offsets[0][i]] ? (0, plan.offsets[1][i]) : (1, plan.offsets[2][i])
        }
        return [try TypedTensor.gathering(values, sources, shape: plan.shape)]
    }

    /// Clip of an integer type between its optional min and max inputs
    /// (opset 11; the type's own bounds when omitted). Floats are the layer's.
    static func clip(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let x = try input(0, inputs, node)
        guard x.elementType.isInteger, x.elementType != .bool, node.opset >= 11 else { return nil }
        func bound(_ i: Int, _ what: String) throws -> Int64? {
            guard i < inputs.count, let tensor = inputs[i] else { return nil }
            guard tensor.elementType == x.elementType else { throw node.error("\(what) is \(tensor.elementType); input is \(x.elementType)") }
            return try scalarInteger(tensor, what, node)
        }
        let (low, high) = (try bound(1, "min"), try bound(2, "max"))
        switch Lanes(x) {
        case .signed(let v):
            let (lo, hi) = (low ?? .min, high ?? .max)
            return [try Lanes.signed(v.map { Swift.min(Swift.max($0, lo), hi) }).tensor(x.elementType, shape: x.shape)]
        case .unsigned(let v):
            let (lo, hi) = (low.map { UInt64(bitPattern: $0) } ?? .min, high.map { UInt64(bitPattern: $0) } ?? .max)
            return [try Lanes.unsigned(v.map { Swift.min(Swift.max($0, lo), hi) }).tensor(x.elementType, shape: x.shape)]
        default: return nil
        }
    }
}
