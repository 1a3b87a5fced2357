import LayerKitONNX

/// The integer arithmetic of shape computations, folded at load on Int64
/// with ONNX's multidirectional broadcasting: element-wise ops, comparisons
/// (booleans as 0/1), `Where`, and the reductions exporters apply to
/// shapes. Division truncates toward zero, as onnxruntime's integer `Div`.
enum IntegerArithmetic {
    case unary((Int64) throws -> Int64)
    case binary((Int64, Int64) throws -> Int64)
    case select
    case reduce(Int64, (Int64, Int64) throws -> Int64)
    case variadic((Int64, Int64) -> Int64)

    /// The folding of `op` on integers, nil when there is none.
    init?(_ op: String) {
        func overflow(_ op: String) -> LayerKitError { .invalidModel("integer \(op) overflows Int64") }
        /// `f`, throwing where it overflows: a wrapped value would become a wrong shape, silently.
        func checked(_ op: String, _ f: @escaping (Int64, Int64) -> (partialValue: Int64, overflow: Bool))
            -> (Int64, Int64) throws -> Int64 {
            { a, b in
                let (value, overflowed) = f(a, b)
                if overflowed { throw overflow(op) }
                return value
            }
        }
        switch op {
        case "Add": self = .binary(checked("Add") { $0.addingReportingOverflow($1) })
        case "Sub": self = .binary(checked("Sub") { $0.subtractingReportingOverflow($1) })
        case "Mul": self = .binary(checked("Mul") { $0.multipliedReportingOverflow(by: $1) })
        case "Div":
            self = .binary { a, b in
                guard b != 0 else { throw LayerKitError.invalidModel("integer division by zero") }
                let (v, o) = a.dividedReportingOverflow(by: b); if o { throw overflow("Div") }; return v
            }
        case "Mod":
            // ONNX Mod with fmod 0 (integers): the result takes the divisor's sign, as Python's %.
            self = .binary { a, b in
                guard b != 0 else { throw LayerKitError.invalidModel("integer Mod by zero") }
                let r = a % b
                return r != 0 && (r < 0) != (b < 0) ? r + b : r
            }
        case "Max": self = .variadic(Swift.max)
        case "Min": self = .variadic(Swift.min)
        case "Equal": self = .binary { $0 == $1 ? 1 : 0 }
        case "Less": self = .binary { $0 < $1 ? 1 : 0 }
        case "Greater": self = .binary { $0 > $1 ? 1 : 0 }
        case "LessOrEqual": self = .binary { $0 <= $1 ? 1 : 0 }
        case "GreaterOrEqual": self = .binary { $0 >= $1 ? 1 : 0 }
        case "And": self = .binary { $0 != 0 && $1 != 0 ? 1 : 0 }
        case "Or": self = .binary { $0 != 0 || $1 != 0 ? 1 : 0 }
        case "Xor": self = .binary { ($0 != 0) != ($1 != 0) ? 1 : 0 }
        case "Not": self = .unary { $0 == 0 ? 1 : 0 }
        case "Neg": self = .unary { guard $0 != .min else { throw overflow("Neg") }; return -$0 }
        case "Abs": self = .unary { guard $0 != .min else { throw overflow("Abs") }; return Swift.abs($0) }
        case "Sign": self = .unary { $0.signum() }
        case "Identity": self = .unary { $0 }
        case "Where": self = .select
        case "ReduceProd": self = .reduce(1, checked("ReduceProd") { $0.multipliedReportingOverflow(by: $1) })
        case "ReduceSum": self = .reduce(0, checked("ReduceSum") { $0.addingReportingOverflow($1) })
        case "ReduceMax": self = .reduce(.min, Swift.max)
        case "ReduceMin": self = .reduce(.max, Swift.min)
        default: return nil
        }
    }

    /// The op on `inputs` (the node's given inputs, in order).
    func apply(_ node: ONNXNodeContext, _ inputs: [IntArray]) throws -> [ONNXTensor] {
        do {
            switch self {
            case .unary(let f):
                guard inputs.count == 1 else { throw node.error("takes one input") }
                return [IntArray(shape: inputs[0].shape, values: try inputs[0].values.map(f)).tensor]
            case .binary(let f):
                guard inputs.count == 2 else { throw node.error("takes two inputs") }
                return [try IntegerArithmetic.broadcast(inputs, node) { try f($0[0], $0[1]) }.tensor]
            case .variadic(let f):
                guard !inputs.isEmpty else { throw node.error("takes at least one input") }
                return [try IntegerArithmetic.broadcast(inputs, node) { $0.dropFirst().reduce($0[0], f) }.tensor]
            case .select:
                guard inputs.count == 3 else { throw node.error("takes a condition and two inputs") }
                return [try IntegerArithmetic.broadcast(inputs, node) { $0[0] != 0 ? $0[1] : $0[2] }.tensor]
            case .reduce(let initial, let f):
                return [try IntegerArithmetic.reduce(node, inputs, initial, f).tensor]
            }
        } catch let failure as LayerKitError {
            throw node.naming(failure)
        }
    }

    /// `f` over the broadcast of `inputs` (numpy rules: ranks aligned on
    /// the right, extents equal or 1).
    static func broadcast(_ inputs: [IntArray], _ node: ONNXNodeContext,
                          _ f: ([Int64]) throws -> Int64) throws -> IntArray {
        let rank = inputs.map(\.shape.count).max() ?? 0
        let shapes = inputs.map { Array(repeating: 1, count: rank - $0.shape.count) + $0.shape }
        var shape: [Int] = []
        for axis in 0..<rank {
            let extents = Set(shapes.map { $0[axis] }).subtracting([1])
            guard extents.count <= 1 else {
                throw node.error("inputs \(inputs.map { Tensor.describe($0.shape) }) do not broadcast")
            }
            shape.append(extents.first ?? (shapes.contains { $0[axis] == 0 } ? 0 : 1))
        }
        let count = try ONNXFolding.checkedCount(shape, node)
        // Row-major strides of each input, 0 along broadcast axes.
        let strides: [[Int]] = shapes.map { s in
            var strides = Array(repeating: 0, count: rank), step = 1
            for axis in (0..<rank).reversed() {
                strides[axis] = s[axis] == 1 ? 0 : step
                step *= s[axis]
            }
            return strides
        }
        var values: [Int64] = []
        values.reserveCapacity(count)
        var index = Array(repeating: 0, count: rank)
        var operands = Array(repeating: Int64(0), count: inputs.count)
        for _ in 0..<count {
            for k in inputs.indices {
                var offset = 0
                for axis in 0..<rank { offset += index[axis] * strides[k][axis] }
                operands[k] = inputs[k].values[offset]
            }
            values.append(try f(operands))
            advance(&index, in: shape)
        }
        return IntArray(shape: shape, values: values)
    }

    /// A reduction over the axes (attribute, or input 1 from opset 18;
    /// ReduceSum from 13), keepdims as ONNX.
    static func reduce(_ node: ONNXNodeContext, _ inputs: [IntArray], _ initial: Int64,
                       _ f: (Int64, Int64) throws -> Int64) throws -> IntArray {
        let data = inputs[0]
        let rank = data.shape.count
        var axes = try node.ints("axes")
        if axes == nil, inputs.count > 1 { axes = inputs[1].values.map { Int($0) } }
        let keep = try node.int("keepdims", default: 1) != 0
        let all = axes?.isEmpty ?? true
        if all, try node.int("noop_with_empty_axes", default: 0) != 0 { return data }
        let reduced = Set(try (all ? Array(0..<rank) : axes!).map { try node.axis($0, rank: rank) })
        let outShape = (0..<rank).compactMap { reduced.contains($0) ? (keep ? 1 : nil) : data.shape[$0] }
        let kept = (0..<rank).filter { !reduced.contains($0) }
        let count = try ONNXFolding.checkedCount(kept.map { data.shape[$0] }, node)
        var values = Array(repeating: initial, count: count)
        var index = Array(repeating: 0, count: rank)
        for value in data.values {
            var out = 0
            for axis in kept { out = out * data.shape[axis] + index[axis] }
            values[out] = try f(values[out], value)
            advance(&index, in: data.shape)
        }
        return IntArray(shape: outShape, values: values)
    }

    /// Steps the row-major multi-index `index` to the next element of `shape`.
    private static func advance(_ index: inout [Int], in shape: [Int]) {
        var axis = shape.count - 1
        while axis >= 0 {
            index[axis] += 1
            if index[axis] < shape[axis] { return }
            index[axis] = 0
            axis -= 1
        }
    }
}
