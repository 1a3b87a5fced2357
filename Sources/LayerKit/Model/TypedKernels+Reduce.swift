import Foundation
import LayerKitONNX

/// Reductions along axes: ReduceSum/Prod/Min/Max/Mean of integer types
/// (float reductions are the layers'), ArgMax/ArgMin, CumSum and CumProd of every
/// numeric type.
extension TypedKernels {
    enum Reduction {
        case sum, prod, min, max, mean

        /// The op's name, for the overflow error.
        var name: String {
            switch self {
            case .sum: "ReduceSum"
            case .prod: "ReduceProd"
            case .min: "ReduceMin"
            case .max: "ReduceMax"
            case .mean: "ReduceMean"
            }
        }
    }

    /// The reduced axes (attribute, or input 1: ReduceSum from opset 13, the
    /// others from 18), nil for "no reduction" (`noop_with_empty_axes`).
    private static func reducedAxes(_ node: ONNXNodeContext, _ inputs: [TypedTensor?], rank: Int) throws -> Set<Int>? {
        var axes = try node.ints("axes")
        if axes == nil, inputs.count > 1, let given = inputs[1] { axes = given.integers().map { Int($0) } }
        if axes?.isEmpty ?? true {
            if try node.int("noop_with_empty_axes", default: 0) != 0 { return nil }
            return Set(0..<rank)
        }
        return Set(try axes!.map { try node.axis($0, rank: rank) })
    }

    /// For each element of `shape`, the output element of a reduction over
    /// `reduced` it falls into, and the kept axes' extents.
    private static func slots(_ shape: [Int], reducing reduced: Set<Int>, _ node: ONNXNodeContext) throws -> (slots: [Int], count: Int) {
        let kept = shape.indices.filter { !reduced.contains($0) }
        let count = try ONNXFolding.checkedCount(kept.map { shape[$0] }, node)
        let total = try node.elementCount(shape)
        var slots = [Int](repeating: 0, count: total)
        var index = Array(repeating: 0, count: shape.count)
        for i in 0..<total {
            var out = 0
            for axis in kept { out = out * shape[axis] + index[axis] }
            slots[i] = out
            RowMajorIndex.step(&index, through: shape)
        }
        return (slots, count)
    }

    /// A reduction of an integer type: wrapping, checked for int64 (a
    /// wrapped product of extents would be a wrong shape); Mean divides
    /// the sum, truncating.
    static func reduce(_ node: ONNXNodeContext, _ inputs: [TypedTensor?], _ op: Reduction) throws -> [TypedTensor]? {
        let data = try input(0, inputs, node)
        let type = data.elementType
        guard type.isInteger, type != .bool else { return nil }
        let rank = data.shape.count
        guard let reduced = try reducedAxes(node, inputs, rank: rank) else { return [data] }
        let keep = try node.int("keepdims", default: 1) != 0
        let shape = (0..<rank).compactMap { reduced.contains($0) ? (keep ? 1 : nil) : data.shape[$0] }
        let (slots, count) = try slots(data.shape, reducing: reduced, node)
        switch Lanes(data) {
        case .signed(let v):
            let checked = isChecked(type)
            func combine(_ a: Int64, _ b: Int64) throws -> Int64 {
                let (value, overflowed): (Int64, Bool)
                switch op {
                case .sum, .mean: (value, overflowed) = a.addingReportingOverflow(b)
                case .prod: (value, overflowed) = a.multipliedReportingOverflow(by: b)
                case .min: return Swift.min(a, b)
                case .max: return Swift.max(a, b)
                }
                if overflowed && checked { throw overflow(op.name) }
                return value
            }
            let initial: Int64 = op == .prod ? 1 : op == .min ? .max : op == .max ? .min : 0
            var out = [Int64](repeating: initial, count: count)
            for (i, value) in v.enumerated() { out[slots[i]] = try combine(out[slots[i]], value) }
            if op == .mean, v.count > 0 { out = out.map { $0 / Int64(v.count / max(count, 1)) } }
            return [try Lanes.signed(out).tensor(type, shape: shape)]
        case .unsigned(let v):
            let initial: UInt64 = op == .prod ? 1 : op == .min ? .max : 0
            var out = [UInt64](repeating: initial, count: count)
            for (i, value) in v.enumerated() {
                let a = out[slots[i]]
                switch op {
                case .sum, .mean: out[slots[i]] = a &+ value
                case .prod: out[slots[i]] = a &* value
                case .min: out[slots[i]] = Swift.min(a, value)
                case .max: out[slots[i]] = Swift.max(a, value)
                }
            }
            if op == .mean, v.count > 0 { out = out.map { $0 / UInt64(v.count / max(count, 1)) } }
            return [try Lanes.unsigned(out).tensor(type, shape: shape)]
        default: return nil
        }
    }

    /// ArgMax/ArgMin along `axis` (keepdims, select_last_index): int64 indices.
    /// A NaN is never the extreme of a float slice.
    static func argExtreme(_ node: ONNXNodeContext, _ inputs: [TypedTensor?], largest: Bool) throws -> [TypedTensor]? {
        let data = try input(0, inputs, node)
        guard data.elementType != .string, !data.elementType.isComplex else { return nil }
        let shape = data.shape
        let axis = try node.axis(node.int("axis", default: 0), rank: max(shape.count, 1))
        guard axis < shape.count, shape[axis] > 0 else { throw node.error("cannot take the extreme of an empty axis") }
        let keep = try node.int("keepdims", default: 1) != 0
        let last = try node.int("select_last_index", default: 0) != 0
        let (outer, extent) = (shape[..<axis].reduce(1, *), shape[axis])
        let inner = shape[(axis + 1)...].reduce(1, *)
        // Whether a beats b: strictly, or on ties when the last index is wanted.
        func better<T: Comparable>(_ values: [T]) -> (Int, Int) -> Bool {
            { a, b in largest ? (values[a] > values[b] || (last && values[a] == values[b]))
                : (values[a] < values[b] || (last && values[a] == values[b])) }
        }
        let beats: (Int, Int) -> Bool
        switch Lanes(data) {
        case .signed(let v): beats = better(v)
        case .unsigned(let v): beats = better(v)
        case .bool(let v): beats = better(v.map { $0 ? 1 : 0 })
        case .float(let v): beats = better(v)
        case .double(let v): beats = better(v)
        case .string: return nil
        }
        var indices: [Int64] = []
        indices.reserveCapacity(outer * inner)
        for o in 0..<outer {
            for i in 0..<inner {
                var best = 0
                for k in 1..<extent where beats((o * extent + k) * inner + i, (o * extent + best) * inner + i) { best = k }
                indices.append(Int64(best))
            }
        }
        var outShape = shape
        if keep { outShape[axis] = 1 } else { outShape.remove(at: axis) }
        return [try TypedTensor(.int64, shape: outShape, integers: indices)]
    }

    /// CumSum along the axis input (exclusive, reverse), in the data's type:
    /// a running sum in order, as onnxruntime adds.
    static func cumulativeSum(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try cumulative(node, inputs, product: false)
    }

    /// CumProd (opset 26), CumSum's twin: a running product, 1 before the
    /// first element when exclusive.
    static func cumulativeProduct(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try cumulative(node, inputs, product: true)
    }

    /// A running sum or product along the axis input; int64 checked (an
    /// overflow is an error), other integers wrapping.
    private static func cumulative(_ node: ONNXNodeContext, _ inputs: [TypedTensor?], product: Bool) throws -> [TypedTensor]? {
        try node.requireAttributes(["exclusive", "reverse"])
        let data = try input(0, inputs, node)
        let shape = data.shape
        let axis = try node.axis(Int(scalarInteger(input(1, inputs, node), "axis", node)), rank: shape.count)
        let exclusive = try node.int("exclusive", default: 0) != 0
        let reverse = try node.int("reverse", default: 0) != 0
        let (outer, extent) = (shape[..<axis].reduce(1, *), shape[axis])
        let inner = shape[(axis + 1)...].reduce(1, *)
        func scan<T>(_ v: [T], _ identity: T, _ combine: (T, T) throws -> T) rethrows -> [T] {
            var out = v
            for o in 0..<outer {
                for i in 0..<inner {
                    var running = identity
                    for step in 0..<extent {
                        let k = reverse ? extent - 1 - step : step
                        let at = (o * extent + k) * inner + i
                        if exclusive {
                            out[at] = running
                            running = try combine(running, v[at])
                        } else {
                            running = try combine(running, v[at])
                            out[at] = running
                        }
                    }
                }
            }
            return out
        }
        let result: Lanes
        switch Lanes(data) {
        case .signed(let v):
            let checked = isChecked(data.elementType)
            result = .signed(try scan(v, product ? 1 : 0) { a, b in
                let (value, overflowed) = product ? a.multipliedReportingOverflow(by: b) : a.addingReportingOverflow(b)
                if overflowed && checked { throw overflow(product ? "CumProd" : "CumSum") }
                return value
            })
        case .unsigned(let v): result = .unsigned(product ? scan(v, 1, &*) : scan(v, 0, &+))
        case .float(let v): result = .float(product ? scan(v, 1, *) : scan(v, 0, +))
        case .double(let v): result = .double(product ? scan(v, 1, *) : scan(v, 0, +))
        case .bool, .string: return nil
        }
        return [try result.tensor(data.elementType, shape: shape)]
    }
}
