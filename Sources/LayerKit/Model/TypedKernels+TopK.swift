import Foundation
import LayerKitONNX

/// TopK: the K largest (or smallest) elements along an axis and their
/// int64 indices. K decides the output shape, so it is known at prepare
/// (`ONNXShapeInputs`); the values are moved on their bits, exact for
/// every type.
extension TypedKernels {
    /// TopK-1 (k an attribute), 10 (K an input) and 11 on (largest,
    /// sorted). Equal values keep their order, the lower index first, as
    /// onnxruntime orders them; a NaN ranks above every number. The output
    /// is always sorted: `sorted = 0` leaves the order to the runtime.
    static func topK(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(node.opset < 10 ? ["axis", "k"] : node.opset < 11 ? ["axis"] : ["axis", "largest", "sorted"])
        let x = try input(0, inputs, node)
        guard !x.shape.isEmpty else { throw node.error("input must have rank 1 or more") }
        let k: Int64
        if node.opset < 10 {
            guard let attribute = try node.node.int("k") else { throw node.error("attribute 'k' is required") }
            k = Int64(attribute)
        } else {
            k = try scalarInteger(input(1, inputs, node), "K", node)
        }
        let axis = try node.axis(node.int("axis", default: -1), rank: x.shape.count)
        let largest = try node.int("largest", default: 1) != 0
        let extent = x.shape[axis]
        guard k >= 0, k <= Int64(extent) else { throw node.error("K \(k) must be from 0 to the axis's extent \(extent)") }
        var shape = x.shape
        shape[axis] = Int(k)
        let count = try ONNXFolding.checkedCount(shape, node)
        let comesFirst: (Int, Int) -> Bool
        switch Lanes(x) {
        case .signed(let v): comesFirst = order(v, largest: largest, isNaN: { _ in false })
        case .unsigned(let v): comesFirst = order(v, largest: largest, isNaN: { _ in false })
        case .float(let v): comesFirst = order(v, largest: largest, isNaN: \.isNaN)
        case .double(let v): comesFirst = order(v, largest: largest, isNaN: \.isNaN)
        case .bool(let v): comesFirst = order(v.map { $0 ? 1 : 0 }, largest: largest, isNaN: { _ in false })
        case .string: throw node.error("TopK of strings is not supported (ONNX's TopK takes numbers)")
        }
        let (outer, inner) = (x.shape[..<axis].reduce(1, *), x.shape[(axis + 1)...].reduce(1, *))
        var sources = Array(repeating: (0, 0), count: count), indices = [Int64](repeating: 0, count: count)
        for o in 0..<outer {
            for i in 0..<inner {
                let offset = { (position: Int) in (o * extent + position) * inner + i }
                let ranked = (0..<extent).sorted { comesFirst(offset($0), offset($1)) }
                for (rank, position) in ranked.prefix(Int(k)).enumerated() {
                    let at = (o * Int(k) + rank) * inner + i
                    (sources[at], indices[at]) = ((0, offset(position)), Int64(position))
                }
            }
        }
        return [try TypedTensor.gathering([x], sources, shape: shape), try TypedTensor(.int64, shape: shape, integers: indices)]
    }

    /// Whether the element at offset a comes before the one at b: larger
    /// (or smaller) first, NaN before every number when largest (after
    /// when smallest), ties by position, so the order is total.
    private static func order<T: Comparable>(_ v: [T], largest: Bool, isNaN: @escaping (T) -> Bool) -> (Int, Int) -> Bool {
        { a, b in
            let (x, y) = (v[a], v[b])
            let (xNaN, yNaN) = (isNaN(x), isNaN(y))
            if xNaN != yNaN { return largest ? xNaN : yNaN }
            if !xNaN, x != y { return largest ? x > y : x < y }
            return a < b
        }
    }
}
