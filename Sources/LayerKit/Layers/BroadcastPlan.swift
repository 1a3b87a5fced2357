/// How operand shapes broadcast (ONNX multidirectional, numpy's rule),
/// arranged for vector kernels: the output's row-major order is cut into
/// runs along which each operand either advances by one element or stays on
/// one (stride 0), and the runs are indexed by the remaining outer axes.
///
/// Operands of lower rank are read as if padded with leading 1s. Axes of
/// extent 1 in the output are dropped and neighbouring axes that broadcast
/// alike are merged, so same shapes make one run of everything, a
/// per-channel [1, C, 1, 1] operand runs of H×W over a fixed value, and a
/// scalar one run with stride 0.
struct BroadcastPlan: Sendable {
    /// The output shape.
    let shape: [Int]
    /// Elements per run.
    let run: Int
    /// Each operand's stride along a run: 1, or 0 where it is broadcast.
    let runStrides: [Int32]
    /// The merged outer axes, outermost first: extent and the element
    /// strides of each operand (0 where broadcast).
    private let outer: [(extent: Int, strides: [Int])]

    /// The first two operands' run strides (the binary form).
    var runStrideA: Int32 { runStrides[0] }
    var runStrideB: Int32 { runStrides[1] }

    /// The plan of two operands.
    init(_ a: [Int], _ b: [Int], layer: String) throws { try self.init([a, b], layer: layer) }

    /// The plan of `operands` (at least one); throws naming `layer` unless in
    /// each axis (counted from the right) the extents are equal or 1.
    init(_ operands: [[Int]], layer: String) throws {
        let rank = operands.map(\.count).max() ?? 0
        let padded = operands.map { Array(repeating: 1, count: rank - $0.count) + $0 }
        let described = operands.map { Tensor.describe($0) }.joined(separator: " and ")
        var shape = Array(repeating: 1, count: rank)
        for axis in 0..<rank {
            for extents in padded where extents[axis] != 1 {
                guard shape[axis] == 1 || shape[axis] == extents[axis] else {
                    throw LayerKitError.shapeMismatch(
                        "\(layer): inputs \(described) do not broadcast (extents must be equal or 1, counted from the last axis)")
                }
                shape[axis] = extents[axis]
            }
        }
        // Valid shapes can broadcast to one whose count overflows
        // ([2^32, 1] and [1, 2^32]); checked before the strides multiply.
        do { _ = try Tensor.elementCount(of: shape) } catch {
            throw LayerKitError.shapeMismatch(
                "\(layer): inputs \(described) broadcast to \(Tensor.describe(shape)), too many elements")
        }
        self.shape = shape
        // Groups of axes, innermost first: extent, strides, and which operands broadcast.
        var groups: [(extent: Int, strides: [Int], pattern: [Bool])] = []
        var strides = Array(repeating: 1, count: operands.count)
        for axis in shape.indices.reversed() {
            defer { for k in padded.indices { strides[k] *= padded[k][axis] } }
            guard shape[axis] != 1 else { continue }
            let pattern = padded.map { $0[axis] == 1 }
            if let last = groups.last, last.pattern == pattern {
                groups[groups.count - 1].extent *= shape[axis]
            } else {
                groups.append((shape[axis], zip(pattern, strides).map { $0 ? 0 : $1 }, pattern))
            }
        }
        let inner = groups.first
        run = inner?.extent ?? 1
        runStrides = operands.indices.map { inner?.pattern[$0] == true ? 0 : 1 }
        outer = groups.dropFirst().reversed().map { ($0.extent, $0.strides) }
    }

    /// Calls `body(output, offsets, n)` for consecutive pieces of runs
    /// covering the output elements `range`: `n` elements from element
    /// `output` of the output, reading operand `k` from element `offsets[k]`
    /// (with its run stride).
    func forEachRun(in range: Range<Int>, _ body: (Int, UnsafeBufferPointer<Int>, Int) -> Void) {
        let count = runStrides.count
        withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { offsets in
            var i = range.lowerBound
            while i < range.upperBound {
                var index = i / run
                let offset = i % run
                for k in 0..<count { offsets[k] = offset * Int(runStrides[k]) }
                for axis in outer.reversed() {
                    let position = index % axis.extent
                    index /= axis.extent
                    for k in 0..<count { offsets[k] += position * axis.strides[k] }
                }
                let n = min(run - offset, range.upperBound - i)
                body(i, UnsafeBufferPointer(offsets), n)
                i += n
            }
        }
    }

    /// The two-operand form: `body(output, a, b, n)`.
    func forEachRun(in range: Range<Int>, _ body: (Int, Int, Int, Int) -> Void) {
        forEachRun(in: range) { output, offsets, n in body(output, offsets[0], offsets[1], n) }
    }

    /// Why broadcasting shaders (`binary.comp`, `where.comp`) cannot read
    /// these inputs: each must have the output's rank or one element, since
    /// a tensor of lower rank is not laid out as its padded shape's image
    /// (`[C, 1, 1]` is C items, `[1, C, 1, 1]` C channels). Nil when they can.
    static func whyNotGPU(inputShapes: [[Int]], outputShapes: [[Int]]) -> String? {
        guard let rank = outputShapes.first?.count else { return nil }
        for shape in inputShapes where shape.count != rank && shape.reduce(1, *) != 1 {
            return "its GPU form broadcasts only inputs of the output's rank (or of one element); "
                + "a computed input of lower rank is not laid out as its padded shape"
        }
        return nil
    }
}
