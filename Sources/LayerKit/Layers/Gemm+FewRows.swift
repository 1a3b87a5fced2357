import CKernels
import Foundation
import Synchronization

extension Gemm {
    /// Rows of B in each block of `evaluateFewRows`: a stretch of B read as
    /// one contiguous run (GPT-2's 768 x 2304: 1.2 MB).
    static let fewRowsBlock = 128

    /// One or two rows of A by a row-major B (not transB) with more rows than
    /// one block: B's rows in blocks of `fewRowsBlock`, the first block's
    /// product onto C's start (the addend), each later block's into a
    /// partial row of its own, then the partials added in block order. A
    /// thread streams whole blocks, each one contiguous stretch of B; split
    /// by columns instead, each thread read runs of m / threads floats a
    /// row, which the prefetcher follows poorly (GPT-2 small's decode step
    /// at two threads: its 48 Gemms 13.4 -> 8.2 ms). The sums' order is the
    /// blocks', the same on any thread count.
    func evaluateFewRows(a: Tensor, aRow: Int, aCol: Int, y: Tensor, rows n: Int, threads: Int,
                         epilogue: Epilogue?, residual: Tensor?) throws {
        let (m, k, alpha, weights, addend, c) = (outputFeatures, inputFeatures, alpha, weights, addend, y.dataPointer)
        let blocks = (k + Self.fewRowsBlock - 1) / Self.fewRowsBlock
        // Block b > 0 writes rows [(b - 1) n, b n) of the partials; every float is written before it is read.
        let partials = UnsafeMutablePointer<Float>.allocate(capacity: (blocks - 1) * n * m)
        defer { partials.deallocate() }
        let shared = SendablePointer(raw: UnsafeMutableRawPointer(partials))
        let failed = Atomic(false)
        let threads = min(threads, blocks)
        forEachChunk(count: blocks, chunkSize: (blocks + threads - 1) / threads, threadCount: threads) { range in
            let partials = shared.raw.assumingMemoryBound(to: Float.self)
            for block in range {
                let p0 = block * Self.fewRowsBlock
                // The first block starts from C (its bias, or the whole C copied there), the others from 0.
                let target = block == 0 ? y.dataPointer : partials + (block - 1) * n * m
                let (rowBias, columnBias, onto) = block == 0
                    ? addend?.start(target, rows: n, stride: m, columns: 0..<m) ?? (nil, nil, 0) : (nil, nil, 0)
                if lk_sgemm_f32(n, m, min(Self.fewRowsBlock, k - p0), alpha, a.dataPointer + p0 * aCol, aRow, aCol,
                                weights.dataPointer + p0 * m, m, target, m, rowBias, columnBias, onto) != 0 {
                    failed.store(true, ordering: .relaxed)
                }
            }
        }
        if failed.load(ordering: .relaxed) {
            throw LayerKitError.unsupported("\(layerName): out of memory for its work buffers")
        }
        for block in 1..<blocks {
            let partial = partials + (block - 1) * n * m
            for index in 0..<(n * m) { c[index] += partial[index] }
        }
        epilogue?.apply(matrix: c, residual: residual.map { UnsafePointer($0.dataPointer) }, rows: n, stride: m,
                        columns: 0..<m)
    }
}
