/// How two same-rank shapes broadcast (ONNX multidirectional), arranged for
/// vector kernels: the output's row-major order is cut into runs along which
/// each operand either advances by one element or stays on one (stride 0),
/// and the runs are indexed by the remaining outer axes.
///
/// Axes of extent 1 in the output are dropped and neighbouring axes that
/// broadcast alike are merged, so same shapes make one run of everything, a
/// per-channel [1, C, 1, 1] operand runs of H×W over a fixed value, and a
/// scalar one run with stride 0.
struct BroadcastPlan: Sendable {
    /// The output shape.
    let shape: [Int]
    /// Elements per run.
    let run: Int
    /// Each operand's stride along a run: 1, or 0 where it is broadcast.
    let runStrideA: Int32
    let runStrideB: Int32
    /// The merged outer axes, outermost first: extent and the element
    /// strides of each operand (0 where broadcast).
    private let outer: [(extent: Int, strideA: Int, strideB: Int)]

    init(_ a: [Int], _ b: [Int], layer: String) throws {
        guard a.count == b.count else {
            throw LayerKitError.shapeMismatch(
                "\(layer): inputs \(Tensor.describe(a)) and \(Tensor.describe(b)) differ in rank")
        }
        var shape: [Int] = []
        for (x, y) in zip(a, b) {
            guard x == y || x == 1 || y == 1 else {
                throw LayerKitError.shapeMismatch(
                    "\(layer): inputs \(Tensor.describe(a)) and \(Tensor.describe(b)) do not broadcast (extents must be equal or 1)")
            }
            shape.append(x == 1 ? y : x)
        }
        // Two valid shapes can broadcast to one whose count overflows
        // ([2^32, 1] and [1, 2^32]); checked before the strides multiply.
        do { _ = try Tensor.elementCount(of: shape) } catch {
            throw LayerKitError.shapeMismatch(
                "\(layer): inputs \(Tensor.describe(a)) and \(Tensor.describe(b)) broadcast to \(Tensor.describe(shape)), too many elements")
        }
        self.shape = shape
        // Groups of axes, innermost first: extent, strides, and which operands broadcast.
        var groups: [(extent: Int, strideA: Int, strideB: Int, pattern: (Bool, Bool))] = []
        var strideA = 1, strideB = 1
        for axis in shape.indices.reversed() {
            defer { strideA *= a[axis]; strideB *= b[axis] }
            guard shape[axis] != 1 else { continue }
            let pattern = (a[axis] == 1, b[axis] == 1)
            if let last = groups.last, last.pattern == pattern {
                groups[groups.count - 1].extent *= shape[axis]
            } else {
                groups.append((shape[axis], pattern.0 ? 0 : strideA, pattern.1 ? 0 : strideB, pattern))
            }
        }
        let inner = groups.first
        run = inner?.extent ?? 1
        runStrideA = inner?.pattern.0 == true ? 0 : 1
        runStrideB = inner?.pattern.1 == true ? 0 : 1
        outer = groups.dropFirst().reversed().map { ($0.extent, $0.strideA, $0.strideB) }
    }

    /// Calls `body(output, a, b, n)` for consecutive pieces of runs covering
    /// the output elements `range`: `n` elements from element `output` of
    /// the output, reading the operands from elements `a` and `b` (with the
    /// run strides).
    func forEachRun(in range: Range<Int>, _ body: (Int, Int, Int, Int) -> Void) {
        var i = range.lowerBound
        while i < range.upperBound {
            var index = i / run
            let offset = i % run
            var a = offset * Int(runStrideA), b = offset * Int(runStrideB)
            for axis in outer.reversed() {
                let position = index % axis.extent
                index /= axis.extent
                a += position * axis.strideA
                b += position * axis.strideB
            }
            let n = min(run - offset, range.upperBound - i)
            body(i, a, b, n)
            i += n
        }
    }
}
