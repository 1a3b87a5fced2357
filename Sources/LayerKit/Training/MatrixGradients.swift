import CKernels
import Synchronization

/// The matrix pieces of the Gemm and MatMul backward passes, on the CPU:
/// products by `lk_sgemm_f32` (blocks of output columns split over
/// threads, each element summed by one call), transposes, and the
/// reduction of a gradient onto a broadcast operand.
enum MatrixGradients {
    /// `alpha * A * B` as a new `[rows, columns]` tensor, A `rows x inner`
    /// with element (i, p) at `a[i * aRow + p * aCol]`, B row-major with row
    /// stride `ldb`.
    static func product(rows: Int, columns: Int, inner: Int, alpha: Float, a: UnsafePointer<Float>, aRow: Int,
                        aCol: Int, b: UnsafePointer<Float>, ldb: Int) throws -> Tensor {
        let result = try Tensor(shape: [rows, columns])
        try accumulate(rows: rows, columns: columns, inner: inner, alpha: alpha, a: a, aRow: aRow, aCol: aCol,
                       b: b, ldb: ldb, into: result.dataPointer, ldc: columns)
        return result
    }

    /// Adds `alpha * A * B` (as in `product`) onto the `rows x columns`
    /// window of C with row stride `ldc`.
    static func accumulate(rows: Int, columns: Int, inner: Int, alpha: Float, a: UnsafePointer<Float>, aRow: Int,
                           aCol: Int, b: UnsafePointer<Float>, ldb: Int, into c: UnsafeMutablePointer<Float>,
                           ldc: Int) throws {
        guard rows > 0, columns > 0, inner > 0 else { return }
        let threads = min(CPUThreads.current, max(1, rows * columns * inner / Convolution.minimumWorkPerThread))
        let width = threads == 1 ? columns : max(64, (columns + 2 * threads - 1) / (2 * threads))
        let pointers = Pointers(a: a, b: b, c: c)
        let failed = Atomic(false)
        forEachChunk(count: columns, chunkSize: width, threadCount: threads) { block in
            let j0 = block.lowerBound
            if lk_sgemm_f32(rows, block.count, inner, alpha, pointers.a, aRow, aCol, pointers.b + j0, ldb,
                            pointers.c + j0, ldc, nil, nil, 1) != 0 {
                failed.store(true, ordering: .relaxed)
            }
        }
        if failed.load(ordering: .relaxed) {
            throw LayerKitError.unsupported("matrix product gradient: out of memory for the packing buffers")
        }
    }

    /// `t` with the last two axes swapped (every matrix of a batch transposed).
    static func transposed(_ t: Tensor) throws -> Tensor {
        let rank = t.shape.count
        guard rank >= 2 else { return try t.reshaped(to: t.shape) }
        let (rows, columns) = (t.shape[rank - 2], t.shape[rank - 1])
        let result = try Tensor(shape: Array(t.shape.dropLast(2)) + [columns, rows])
        let size = rows * columns
        guard size > 0 else { return result }
        for matrix in 0..<t.count / size {
            lk_transpose_f32(rows, columns, t.dataPointer + matrix * size, columns, result.dataPointer + matrix * size, rows)
        }
        return result
    }

    /// `scale` times the sums of the matrix `g` (`[rows, columns]`) over
    /// the axes along which an operand of `shape` (rank 0 to 2, numpy
    /// broadcasting) was broadcast to it, in Double: the gradient of that
    /// operand. `[1]` or a scalar sums everything, `[columns]` the rows.
    static func reduced(_ g: Tensor, to shape: [Int], scale: Float) throws -> Tensor {
        let (rows, columns) = (g.shape[0], g.shape[1])
        let padded = Array(repeating: 1, count: max(0, 2 - shape.count)) + shape
        guard padded.count == 2, padded[0] == rows || padded[0] == 1, padded[1] == columns || padded[1] == 1 else {
            throw LayerKitError.shapeMismatch(
                "an operand \(Tensor.describe(shape)) does not broadcast to the product \(Tensor.describe(g.shape))")
        }
        var sums = [Double](repeating: 0, count: padded[0] * padded[1])
        for i in 0..<rows {
            let row = padded[0] == 1 ? 0 : i * padded[1]
            for j in 0..<columns { sums[row + (padded[1] == 1 ? 0 : j)] += Double(g[i * columns + j]) }
        }
        return try Tensor(shape: shape, values: sums.map { Float(Double(scale) * $0) })
    }

    /// The operands handed to worker threads, which read A and B and write
    /// disjoint columns of C.
    private struct Pointers: @unchecked Sendable {
        let a: UnsafePointer<Float>
        let b: UnsafePointer<Float>
        let c: UnsafeMutablePointer<Float>
    }
}
