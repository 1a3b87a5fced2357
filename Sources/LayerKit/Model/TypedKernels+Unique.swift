import Foundation
import LayerKitONNX

/// Unique, in the input's own element type: its values (or slices along an
/// axis) compared exactly, moved by their bits.
extension TypedKernels {
    /// Unique-11 and 28 (types): the distinct elements of X flattened or,
    /// with `axis`, its distinct slices along it, in ascending
    /// (lexicographic) order when `sorted` (default), else in order of first
    /// appearance. Outputs Y, each one's first index, every element's (or
    /// slice's) index into Y, and each one's count, the last three int64.
    /// Floats compare as numbers: 0 and -0 are one value, every NaN its own.
    static func unique(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["axis", "sorted"])
        let x = try input(0, inputs, node)
        let axis = try node.node.int("axis").map { try node.axis($0, rank: x.shape.count) }
        let sorted = try node.int("sorted", default: 1) != 0
        let extent = axis.map { x.shape[$0] } ?? x.count
        let outer = axis.map { x.shape[..<$0].reduce(1, *) } ?? 1
        let inner = axis.map { x.shape[($0 + 1)...].reduce(1, *) } ?? 1
        // Slice j's elements: (o, j, i) for every outer o and inner i, in order.
        let offsets = { (j: Int) in (0..<outer).flatMap { o in (0..<inner).map { (o * extent + j) * inner + $0 } } }
        let groups: UniqueSlices
        switch Lanes(x) {
        case .signed(let v): groups = UniqueSlices(extent, sorted: sorted) { j in offsets(j).map { v[$0] } }
        case .unsigned(let v): groups = UniqueSlices(extent, sorted: sorted) { j in offsets(j).map { v[$0] } }
        case .bool(let v): groups = UniqueSlices(extent, sorted: sorted) { j in offsets(j).map { v[$0] ? 1 : 0 } }
        case .float(let v): groups = UniqueSlices(extent, sorted: sorted) { j in offsets(j).map { v[$0] } }
        case .double(let v): groups = UniqueSlices(extent, sorted: sorted) { j in offsets(j).map { v[$0] } }
        case .string(let v): groups = UniqueSlices(extent, sorted: sorted) { j in offsets(j).map { v[$0] } }
        }
        let count = groups.firsts.count
        var shape = [count]
        if let axis { shape = x.shape; shape[axis] = count }
        let sources = (0..<outer).flatMap { o in
            groups.firsts.flatMap { j in (0..<inner).map { (0, (o * extent + j) * inner + $0) } }
        }
        return [try TypedTensor.gathering([x], sources, shape: shape),
                try TypedTensor(.int64, shape: [count], integers: groups.firsts.map(Int64.init)),
                try TypedTensor(.int64, shape: [extent], integers: groups.inverse.map(Int64.init)),
                try TypedTensor(.int64, shape: [count], integers: groups.counts.map(Int64.init))]
    }
}

/// The distinct keys among `extent` slices: each distinct one's first
/// slice, every slice's index among them, and each one's count.
private struct UniqueSlices {
    var firsts: [Int] = []
    var inverse: [Int] = []
    var counts: [Int] = []

    init<T: Comparable & Hashable>(_ extent: Int, sorted: Bool, key: (Int) -> [T]) {
        var seen: [[T]: Int] = [:], keys: [[T]] = []
        for j in 0..<extent {
            let k = key(j)
            if let found = seen[k] {
                counts[found] += 1
                inverse.append(found)
                continue
            }
            seen[k] = keys.count
            inverse.append(keys.count)
            keys.append(k)
            firsts.append(j)
            counts.append(1)
        }
        guard sorted else { return }
        let order = keys.indices.sorted { keys[$0].lexicographicallyPrecedes(keys[$1]) }
        var rank = [Int](repeating: 0, count: order.count)
        for (position, k) in order.enumerated() { rank[k] = position }
        (firsts, counts, inverse) = (order.map { firsts[$0] }, order.map { counts[$0] }, inverse.map { rank[$0] })
    }
}
