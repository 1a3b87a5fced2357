import CKernels
import Foundation

/// A matrix product of two computed tensors, on the CPU (`lk_sgemm_f32`
/// per matrix):
///
/// - ONNX `MatMul` with numpy's `matmul` semantics: any ranks from 1, a 1-D
///   A read as one row `[1, K]` and a 1-D B as one column `[K, 1]` (the
///   added axis dropped from the result), the batch axes (all but the last
///   two) broadcast as numpy broadcasts.
/// - ONNX `Gemm` in every form: `Y = alpha * A' * B' + beta * C` with A
///   and B matrices (transposed by `transA`/`transB`) and an optional third
///   input C broadcast to `[M, N]` (a scalar, `[N]`, `[1, N]`, `[M, 1]`,
///   `[M, N]`).
///
/// A constant B of a 2-D product is the `Gemm` layer's case, which has a
/// GPU form; this layer is the general one, on the GPU for attention's
/// rank-4 products (`MatMulLayer+GPU.swift`).
public final class MatMulLayer: Layer, Sendable {
    /// "MatMul" or "Gemm".
    public let layerName: String
    /// Whether A is given as `[K, M]` (Gemm only).
    public let transA: Bool
    /// Whether B is given as `[N, K]` (Gemm only).
    public let transB: Bool
    public let alpha: Float
    public let beta: Float
    /// Whether a third input C is added (Gemm only).
    public let hasC: Bool
    /// Gemm's 2-D form, or MatMul's batched one.
    let isGemm: Bool
    /// The GPU pipeline, per context.
    let gpuKernel = PerContext<GPUKernel<MatMulConstants>>()

    /// ONNX MatMul: numpy matmul of the two inputs.
    public init() {
        (layerName, transA, transB, alpha, beta, hasC, isGemm) = ("MatMul", false, false, 1, 0, false, false)
    }

    /// ONNX Gemm of inputs A, B and (with `hasC`) C.
    public init(transA: Bool, transB: Bool, alpha: Float = 1, beta: Float = 1, hasC: Bool) throws {
        guard alpha.isFinite, beta.isFinite else {
            throw LayerKitError.invalidParameter("Gemm: alpha and beta must be finite, got \(alpha) and \(beta)")
        }
        (layerName, self.transA, self.transB, self.alpha, self.beta, self.hasC, isGemm) =
            ("Gemm", transA, transB, alpha, beta, hasC, true)
    }

    /// The geometry of one product: M, K, N, the batch shape, and each
    /// operand's shape with 1-D operands promoted.
    struct Geometry {
        var m = 0, k = 0, n = 0
        var batch: [Int] = []
        var a: [Int] = [], b: [Int] = []
        var output: [Int] = []
    }

    /// The geometry of a product of operands of `shapes`; throws when they
    /// do not chain or broadcast.
    func geometry(_ shapes: [[Int]]) throws -> Geometry {
        try LayerChecks.requireInputCount(shapes, hasC ? 3 : 2, layer: layerName)
        var g = Geometry()
        let (a, b) = (shapes[0], shapes[1])
        if isGemm {
            guard a.count == 2, b.count == 2 else {
                throw LayerKitError.shapeMismatch(
                    "Gemm: A and B must be matrices, got \(Tensor.describe(a)) and \(Tensor.describe(b))")
            }
            (g.m, g.k) = transA ? (a[1], a[0]) : (a[0], a[1])
            let (k, n) = transB ? (b[1], b[0]) : (b[0], b[1])
            guard k == g.k else {
                throw LayerKitError.shapeMismatch(
                    "Gemm: A' \(Tensor.describe([g.m, g.k])) and B' \(Tensor.describe([k, n])) do not chain (inner extents \(g.k) and \(k))")
            }
            g.n = n
            (g.a, g.b, g.output) = (a, b, [g.m, n])
            if hasC {
                let c = shapes[2]
                let fits = c.count <= 2 && zip(c.reversed(), [n, g.m]).allSatisfy { $0 == $1 || $0 == 1 }
                guard fits else {
                    throw LayerKitError.shapeMismatch(
                        "Gemm: C \(Tensor.describe(c)) does not broadcast to [M, N] = \(Tensor.describe(g.output)) "
                        + "(use a scalar, [N], [1, N], [M, 1] or [M, N])")
                }
            }
            return g
        }
        guard !a.isEmpty, !b.isEmpty else {
            throw LayerKitError.shapeMismatch("MatMul: inputs must have rank 1 or more, got \(Tensor.describe(a)) and \(Tensor.describe(b))")
        }
        g.a = a.count == 1 ? [1, a[0]] : a
        g.b = b.count == 1 ? [b[0], 1] : b
        (g.m, g.k) = (g.a[g.a.count - 2], g.a[g.a.count - 1])
        (g.n) = g.b[g.b.count - 1]
        guard g.b[g.b.count - 2] == g.k else {
            throw LayerKitError.shapeMismatch(
                "MatMul: \(Tensor.describe(a)) and \(Tensor.describe(b)) do not chain (inner extents \(g.k) and \(g.b[g.b.count - 2]))")
        }
        g.batch = try BroadcastPlan(Array(g.a.dropLast(2)), Array(g.b.dropLast(2)), layer: layerName).shape
        g.output = g.batch + (a.count == 1 ? [] : [g.m]) + (b.count == 1 ? [] : [g.n])
        return g
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        let g = try geometry(inputShapes)
        _ = try Tensor.elementCount(of: g.output)
        return [g.output]
    }

    /// One `lk_sgemm_f32` per matrix of the batch and block of output
    /// columns, spread over threads; C (scaled by beta) is written first and
    /// the product accumulated onto it.
    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let g = try geometry(inputs.map(\.shape))
        try LayerChecks.requireOutput(outputs, g.output, layer: layerName)
        let (m, k, n) = (g.m, g.k, g.n)
        let y = outputs[0]
        guard y.count > 0 else { return }
        // B' as row-major [K, N] (lk_sgemm_f32 takes B with unit column stride).
        let b: Tensor
        if transB {
            b = try Tensor(shape: [k, n])
            for p in 0..<k { for j in 0..<n { b[p * n + j] = inputs[1][j * k + p] } }
        } else {
            b = inputs[1]
        }
        let a = inputs[0]
        if hasC {
            let plan = try BroadcastPlan(g.output, inputs[2].shape, layer: layerName)
            let (c, beta) = (inputs[2], beta)
            plan.forEachRun(in: 0..<y.count) { output, _, offset, count in
                var scale = beta
                lk_binary_f32(LK_MUL, c.dataPointer + offset, plan.runStrideB, &scale, 0, y.dataPointer + output, count)
            }
        } else if k == 0 {
            y.dataPointer.update(repeating: 0, count: y.count)
        }
        guard k > 0 else { return }
        // Each matrix's element offset in A and B, batch axes broadcast.
        let batchCount = g.batch.reduce(1, *)
        let aOffsets = Self.matrixOffsets(g.a, batch: g.batch), bOffsets = Self.matrixOffsets(g.b, batch: g.batch)
        let (aRow, aCol) = transA ? (1, m) : (k, 1)
        let threads = min(CPUThreads.current, max(1, batchCount * m * n * k / Convolution.minimumWorkPerThread))
        let columnBlocks = batchCount >= threads ? 1 : max(1, min((n + 63) / 64, (2 * threads + batchCount - 1) / batchCount))
        let width = (n + columnBlocks - 1) / columnBlocks
        let accumulate: Int32 = hasC ? 1 : 0
        let alpha = alpha
        let failed = Failure()
        forEachChunk(count: batchCount * columnBlocks, chunkSize: 1, threadCount: threads) { items in
            for item in items {
                let (matrix, block) = item.quotientAndRemainder(dividingBy: columnBlocks)
                let j0 = block * width
                let columns = min(width, n - j0)
                guard columns > 0 else { continue }
                if lk_sgemm_f32(m, columns, k, alpha, a.dataPointer + aOffsets[matrix], aRow, aCol,
                                b.dataPointer + bOffsets[matrix] + j0, n, y.dataPointer + matrix * m * n + j0, n,
                                nil, nil, accumulate) != 0 {
                    failed.set()
                }
            }
        }
        if failed.isSet { throw LayerKitError.unsupported("\(layerName): out of memory for the packing buffers") }
    }

    /// The element offset of each matrix of `shape` (its last two axes) for
    /// every index of the broadcast `batch` shape, row-major.
    static func matrixOffsets(_ shape: [Int], batch: [Int]) -> [Int] {
        let own = Array(shape.dropLast(2))
        let padded = Array(repeating: 1, count: batch.count - own.count) + own
        let size = shape.suffix(2).reduce(1, *)
        var strides = Array(repeating: 0, count: batch.count)
        var stride = size
        for axis in padded.indices.reversed() {
            strides[axis] = padded[axis] == 1 ? 0 : stride
            stride *= padded[axis]
        }
        let count = batch.reduce(1, *)
        return (0..<count).map { index in
            var rest = index, offset = 0
            for axis in batch.indices.reversed() {
                offset += (rest % batch[axis]) * strides[axis]
                rest /= batch[axis]
            }
            return offset
        }
    }
}

/// A flag set from worker threads.
private final class Failure: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}
