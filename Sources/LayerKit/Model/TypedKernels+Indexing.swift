import Foundation
import LayerKitONNX

/// Ops whose index inputs say where elements go: GatherND, ScatterND,
/// Compress and ReverseSequence. They move elements on their bits
/// (`TypedTensor.gathering`), so they are exact for every type; ScatterND's
/// reductions compute in the data's type as the other typed kernels do.
/// Every index is checked against its axis before it is used: an index out
/// of range is the node's error, never a read past the data.
extension TypedKernels {
    /// An index into an axis of `extent`, negative ones counting from its end.
    private static func wrapped(_ index: Int64, _ extent: Int, _ node: ONNXNodeContext) throws -> Int {
        let i = index < 0 ? index + Int64(extent) : index
        guard i >= 0, i < Int64(extent) else { throw node.error("index \(index) is out of range for an axis of \(extent)") }
        return Int(i)
    }

    /// The data offsets the index tuples of `indices` (its last axis, of m
    /// entries) point at: one per tuple, each tuple naming the first m axes
    /// of `shape` after `batchDims` batch axes (tuple t lies in batch
    /// t / perBatch, the tuples of one batch entry).
    private static func tupleOffsets(_ indices: TypedTensor, into shape: [Int], batchDims: Int, _ node: ONNXNodeContext)
        throws -> [Int] {
        // uint64 is refused: read as Int64, its values past Int64.max would count from the end.
        guard indices.elementType.isInteger, ![.bool, .uint64].contains(indices.elementType) else {
            throw node.error("indices must be signed integers, got \(indices.elementType)")
        }
        // The callers have checked that m tuple entries fit the data's rank.
        let m = indices.shape[indices.shape.count - 1]
        let tuples = indices.shape.dropLast().reduce(1, *)
        let perBatch = indices.shape[batchDims..<(indices.shape.count - 1)].reduce(1, *)
        let strides = LayerChecks.rowMajorStrides(shape)
        let batchStride = batchDims == 0 ? 0 : strides[batchDims - 1]
        let values = indices.integers()
        return try (0..<tuples).map { t in
            var offset = (t / perBatch) * batchStride
            for k in 0..<m {
                offset += try wrapped(values[t * m + k], shape[batchDims + k], node) * strides[batchDims + k]
            }
            return offset
        }
    }

    /// GatherND: the slices of the data the index tuples of the last
    /// indices axis name, after `batch_dims` axes the two share;
    /// output shape indices.shape[..<q-1] + data.shape[b+m...].
    static func gatherND(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(node.opset >= 12 ? ["batch_dims"] : [])
        let data = try input(0, inputs, node), indices = try input(1, inputs, node)
        let (r, q) = (data.shape.count, indices.shape.count)
        let b = try node.int("batch_dims", default: 0)
        guard b >= 0, b < min(r, q) else { throw node.error("batch_dims \(b) must be from 0 to \(min(r, q) - 1) for these ranks") }
        guard data.shape[..<b] == indices.shape[..<b] else {
            throw node.error("data \(Tensor.describe(data.shape)) and indices \(Tensor.describe(indices.shape)) "
                             + "differ in their \(b) batch axes")
        }
        let m = indices.shape[q - 1]
        guard m >= 1, b + m <= r else { throw node.error("index tuples of \(m) entries do not fit data of rank \(r) after \(b) batch axes") }
        let shape = Array(indices.shape.dropLast()) + Array(data.shape[(b + m)...])
        let count = try ONNXFolding.checkedCount(shape, node)
        let slice = data.shape[(b + m)...].reduce(1, *)
        var sources: [(Int, Int)] = []
        sources.reserveCapacity(count)
        if count > 0 {
            for offset in try tupleOffsets(indices, into: data.shape, batchDims: b, node) {
                for j in 0..<slice { sources.append((0, offset + j)) }
            }
        }
        return [try TypedTensor.gathering([data], sources, shape: shape)]
    }

    /// How ScatterND combines an update with the element it lands on.
    private enum ScatterReduction: String {
        case none, add, mul, max, min
    }

    /// ScatterND: the data with the slices the index tuples name replaced
    /// by (or, with `reduction`, combined with) the updates, in order; the
    /// updates' shape is indices.shape[..<q-1] + data.shape[m...].
    static func scatterND(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(node.opset >= 16 ? ["reduction"] : [])
        let typed = try sameType([input(0, inputs, node), input(2, inputs, node)], node)
        let (data, updates, indices) = (typed[0], typed[1], try input(1, inputs, node))
        let name = try node.string("reduction", default: "none")
        guard let reduction = ScatterReduction(rawValue: name), node.opset >= 18 || [.none, .add, .mul].contains(reduction) else {
            throw node.error("reduction '\(name)' is not one of none, add, mul" + (node.opset >= 18 ? ", max, min" : ""))
        }
        guard let m = indices.shape.last else { throw node.error("indices must have rank 1 or more") }
        let expected = Array(indices.shape.dropLast()) + (m <= data.shape.count ? Array(data.shape[m...]) : [])
        guard m >= 1, m <= data.shape.count, updates.shape == expected else {
            throw node.error("updates \(Tensor.describe(updates.shape)) do not match indices \(Tensor.describe(indices.shape)) "
                             + "into data \(Tensor.describe(data.shape)) (expected \(Tensor.describe(expected)))")
        }
        let slice = data.shape[m...].reduce(1, *)
        let offsets = try tupleOffsets(indices, into: data.shape, batchDims: 0, node)
        if reduction == .none {
            var sources = (0..<data.count).map { (0, $0) }
            for (t, offset) in offsets.enumerated() {
                for j in 0..<slice { sources[offset + j] = (1, t * slice + j) }
            }
            return [try TypedTensor.gathering([data, updates], sources, shape: data.shape)]
        }
        func scatter<T>(_ d: [T], _ u: [T], _ combine: (T, T) throws -> T) rethrows -> [T] {
            var out = d
            for (t, offset) in offsets.enumerated() {
                for j in 0..<slice { out[offset + j] = try combine(out[offset + j], u[t * slice + j]) }
            }
            return out
        }
        let type = data.elementType
        let result: Lanes
        switch (Lanes(data), Lanes(updates)) {
        case (.signed(let d), .signed(let u)):
            let checked = isChecked(type)
            result = .signed(try scatter(d, u) { a, b in
                let (value, overflowed): (Int64, Bool)
                switch reduction {
                case .add: (value, overflowed) = a.addingReportingOverflow(b)
                case .mul: (value, overflowed) = a.multipliedReportingOverflow(by: b)
                case .max: return Swift.max(a, b)
                default: return Swift.min(a, b)
                }
                if overflowed && checked { throw overflow("ScatterND") }
                return value
            })
        case (.unsigned(let d), .unsigned(let u)): result = .unsigned(scatter(d, u, combining(reduction, &+, &*)))
        case (.float(let d), .float(let u)): result = .float(scatter(d, u, combining(reduction, +, *)))
        case (.double(let d), .double(let u)): result = .double(scatter(d, u, combining(reduction, +, *)))
        default: throw node.error("reduction '\(name)' of \(type) is not supported")
        }
        return [try result.tensor(type, shape: data.shape)]
    }

    /// A reduction on a type whose arithmetic cannot fail (floats, unsigned).
    private static func combining<T: Comparable>(_ reduction: ScatterReduction, _ add: @escaping (T, T) -> T,
                                                 _ multiply: @escaping (T, T) -> T) -> (T, T) -> T {
        switch reduction {
        case .add: add
        case .mul: multiply
        case .max: { Swift.max($0, $1) }
        default: { Swift.min($0, $1) }
        }
    }

    /// Compress: the slices along `axis` (of the flattened input when
    /// absent) whose condition is true. A condition longer than the axis is
    /// read up to the axis's extent, as onnxruntime reads it.
    static func compress(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["axis"])
        let data = try input(0, inputs, node), condition = try input(1, inputs, node)
        guard condition.shape.count == 1 else {
            throw node.error("condition must be 1-D, got shape \(Tensor.describe(condition.shape))")
        }
        let given = try node.node.int("axis")
        let flat = given == nil
        let shape = flat ? [data.count] : data.shape
        let axis = try given.map { try node.axis($0, rank: shape.count) } ?? 0
        let (outer, extent) = (shape[..<axis].reduce(1, *), shape[axis])
        let inner = shape[(axis + 1)...].reduce(1, *)
        let kept = truth(condition).prefix(extent).enumerated().filter(\.element).map(\.offset)
        var outShape = shape
        outShape[axis] = kept.count
        var sources: [(Int, Int)] = []
        sources.reserveCapacity(try ONNXFolding.checkedCount(outShape, node))
        for o in 0..<outer {
            for k in kept {
                for i in 0..<inner { sources.append((0, (o * extent + k) * inner + i)) }
            }
        }
        return [try TypedTensor.gathering([data], sources, shape: outShape)]
    }

    /// ReverseSequence: per batch entry b, its first sequence_lens[b]
    /// steps along the time axis reversed, the rest as they were.
    static func reverseSequence(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["batch_axis", "time_axis"])
        let data = try input(0, inputs, node), lens = try input(1, inputs, node)
        let shape = data.shape
        let batchAxis = try node.int("batch_axis", default: 1), timeAxis = try node.int("time_axis", default: 0)
        guard shape.count >= 2, Set([batchAxis, timeAxis]) == [0, 1] else {
            throw node.error("batch_axis \(batchAxis) and time_axis \(timeAxis) must be 0 and 1 (in either order) "
                             + "of an input of rank 2 or more, got rank \(shape.count)")
        }
        let (batch, time) = (shape[batchAxis], shape[timeAxis])
        guard lens.elementType.isInteger, lens.elementType != .bool, lens.shape == [batch] else {
            throw node.error("sequence_lens must be \(batch) integers (one per batch entry), got \(lens.elementType) "
                             + Tensor.describe(lens.shape))
        }
        let lengths = try lens.integers().map { length in
            guard length >= 0, length <= Int64(time) else { throw node.error("sequence length \(length) is not from 0 to \(time)") }
            return Int(length)
        }
        let inner = shape[2...].reduce(1, *)
        let sources = (0..<data.count).map { i -> (Int, Int) in
            let (a0, a1) = ((i / inner) / shape[1], (i / inner) % shape[1])
            let (t, b) = timeAxis == 0 ? (a0, a1) : (a1, a0)
            let source = t < lengths[b] ? lengths[b] - 1 - t : t
            let (s0, s1) = timeAxis == 0 ? (source, b) : (b, source)
            return (0, (s0 * shape[1] + s1) * inner + i % inner)
        }
        return [try TypedTensor.gathering([data], sources, shape: shape)]
    }
}
