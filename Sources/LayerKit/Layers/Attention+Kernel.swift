import CKernels
import Foundation
import Synchronization

extension Attention {
    /// Query rows per work item: a key block is packed once per tile, so
    /// taller tiles pack less (Whisper-base's attention at one thread: 32
    /// rows 402 ms, 64 rows 374, 128 rows 356; on 2026-12-05, with the mask
    /// added by the GEMM, 64 rows 372 and 128 rows 360), and a 128-token
    /// sequence is one tile a head (BERT's: 12 items over 2 threads, 7.1 ms
    /// against 7.7 with 24 of 64 rows).
    static let tileRows = 128
    /// Keys per block of the online softmax.
    static let keyBlock = 128

    /// The floats one work item allocates, its only allocation: its query
    /// rows transposed, one block of scores, its output rows accumulated,
    /// and per row the running maximum, the running sum, whether any key
    /// is allowed and the block's maximum. Independent of the sequence
    /// lengths: the score matrix is never held (the scores output aside).
    static func scratchCount(headSize: Int, valueHeadSize: Int) -> Int {
        tileRows * (headSize + keyBlock + valueHeadSize + 4)
    }

    /// One run's computation: a work item per tile of query rows of one
    /// head of one batch item.
    struct Kernel: Sendable {
        let geometry: Geometry
        let options: Options
        let queries: HeadLayout, keys: HeadLayout, values: HeadLayout, y: HeadLayout
        /// The additive mask (already 0 / -inf for a boolean one).
        let mask: Tensor?
        /// The fourth output, `[batch, qHeads, qLength, totalLength]`.
        let scores: Tensor?

        /// Runs every tile, spread over threads.
        func run() throws {
            let g = geometry
            guard g.batch > 0, g.qHeads > 0, g.qLength > 0 else { return }
            let tiles = (g.qLength + tileRows - 1) / tileRows
            let items = g.batch * g.qHeads * tiles
            let work = g.batch * g.qHeads * g.qLength * max(1, g.totalLength) * (g.headSize + g.valueHeadSize)
            let threads = min(CPUThreads.current, max(1, work / Convolution.minimumWorkPerThread))
            let failed = Atomic(false)
            forEachChunk(count: items, chunkSize: 1, threadCount: threads) { range in
                for item in range {
                    let (head, tile) = item.quotientAndRemainder(dividingBy: tiles)
                    if !runTile(batch: head / g.qHeads, head: head % g.qHeads, firstRow: tile * tileRows) {
                        failed.store(true, ordering: .relaxed)
                    }
                }
            }
            if failed.load(ordering: .relaxed) {
                throw LayerKitError.unsupported("Attention: out of memory for the packing buffers")
            }
        }

        /// The mask's row for query `i` of head `h` of batch item `b`
        /// (broadcast axes read at index 0).
        func maskRow(_ b: Int, _ h: Int, _ i: Int) -> UnsafeMutablePointer<Float>? {
            guard let mask, let shape = geometry.mask else { return nil }
            let (heads, rows, keys) = (shape[1], shape[2], shape[3])
            let index = ((shape[0] == 1 ? 0 : b) * heads + (heads == 1 ? 0 : h)) * rows + (rows == 1 ? 0 : i)
            return mask.dataPointer + index * keys
        }

        /// The bias of query `i` (at `position` = i + offset) and key `j`:
        /// -inf past the valid keys, outside the causal frontier or the
        /// window, and past the mask's keys; else the mask's value (0 for none).
        @inline(__always)
        func bias(position: Int, key j: Int, validKeys: Int, mask: UnsafeMutablePointer<Float>?) -> Float {
            if j >= validKeys || (options.isCausal && j > position) { return -.infinity }
            if options.window.left >= 0 && position - j > options.window.left { return -.infinity }
            if options.window.right >= 0 && j - position > options.window.right { return -.infinity }
            guard let mask, let keys = geometry.mask?[3] else { return 0 }
            return j < keys ? mask[j] : -.infinity
        }

        /// Query rows `firstRow...` (up to `tileRows`) of head `h` of batch
        /// item `b`, against blocks of keys with an online softmax. False
        /// when `lk_sgemm_f32` could not allocate its buffers.
        func runTile(batch b: Int, head h: Int, firstRow i0: Int) -> Bool {
            let g = geometry
            // The tile's own rows are the stride of its scratch: one query row (a decode step)
            // makes its products matrix-vector ones and its block of scores one run for exp.
            let rows = min(tileRows, g.qLength - i0)
            let (d, dv, total, stride) = (g.headSize, g.valueHeadSize, g.totalLength, rows)
            let kvHead = h / (g.qHeads / g.kvHeads)
            let scale = options.scale ?? 1 / Float(d).squareRoot()
            let softcap = options.softcap
            let scratch = UnsafeMutablePointer<Float>.allocate(capacity: scratchCount(headSize: d, valueHeadSize: dv))
            defer { scratch.deallocate() }
            // queryT: d x stride; block: keyBlock x stride (key-major scores); acc: stride x dv.
            let queryT = scratch, block = scratch + d * stride, acc = block + keyBlock * stride
            let maximum = acc + stride * dv, sum = maximum + stride, allowed = sum + stride, shift = allowed + stride
            lk_transpose_f32(rows, d, queries.rows(b, h) + i0 * queries.rowStride, queries.rowStride, queryT, stride)
            acc.update(repeating: 0, count: stride * dv)
            maximum.update(repeating: -.infinity, count: rows)
            sum.update(repeating: 0, count: rows)
            allowed.update(repeating: 0, count: rows)
            // The count of valid keys before the first query row (ONNX's causal offset).
            let offset = options.hasPast ? g.pastLength : (options.nonpadLengths.map { $0[b] - g.qLength } ?? 0)
            let validKeys = options.nonpadLengths?[b] ?? total
            // Keys no row of the tile may attend are skipped, unless the scores are an output.
            var (start, end) = (0, min(total, validKeys, g.mask?[3] ?? total))
            if options.isCausal { end = min(end, max(0, i0 + rows + offset)) }
            if options.window.right >= 0 { end = min(end, max(0, i0 + rows + offset + options.window.right)) }
            if options.window.left >= 0 { start = max(0, i0 + offset - options.window.left) }
            if scores != nil { (start, end) = (0, total) }
            let scoreRows = scores.map { $0.dataPointer + ((b * g.qHeads + h) * g.qLength + i0) * total }
            // At most an additive mask to add to the products, nothing to record (ViT's and Whisper's
            // encoder's attention: no mask; BERT's padding mask, GPT-2's causal one as exported): the
            // products' GEMM adds the mask itself, with no pass over the block.
            let additive = softcap == 0 && scores == nil && !options.isCausal && options.window == (-1, -1)
                && options.nonpadLengths == nil && d > 0
            // The mask's rows of the tile: the first, and the stride between them (0: one row for all).
            var maskTile: (first: UnsafeMutablePointer<Float>, rowStride: Int)?
            if additive {
                if let first = maskRow(b, h, i0), let shape = g.mask { maskTile = (first, shape[2] == 1 ? 0 : shape[3]) }
                for r in 0..<rows {
                    // A row attends where some key's bias is not -inf (every key, without a mask).
                    var attends = start < end
                    if attends, let (first, rowStride) = maskTile {
                        let row = first + r * rowStride
                        attends = (start..<end).contains { row[$0] != -.infinity }
                    }
                    allowed[r] = attends ? 1 : 0
                }
            }
            var j0 = start
            while j0 < end {
                let cols = min(keyBlock, end - j0)
                // The mask in the products: one row for every query is a bias per key (a row of the
                // key-major block); a row per query is transposed into the block, which they add to.
                var (keyBias, accumulate): (UnsafePointer<Float>?, Int32) = (nil, 0)
                if let (first, rowStride) = maskTile {
                    if rowStride == 0 {
                        keyBias = UnsafePointer(first + j0)
                    } else {
                        lk_transpose_f32(rows, cols, first + j0, rowStride, block, stride)
                        accumulate = 1
                    }
                }
                if d == 0 {
                    block.update(repeating: 0, count: cols * stride)
                } else if lk_sgemm_f32(cols, rows, d, scale, keys.rows(b, kvHead) + j0 * keys.rowStride, keys.rowStride,
                                       1, queryT, stride, block, stride, keyBias, nil, accumulate) != 0 {
                    return false
                }
                if !additive {
                    for r in 0..<rows {
                        let position = i0 + r + offset
                        let row = maskRow(b, h, i0 + r)
                        let scoreRow = scoreRows.map { $0 + r * total + j0 }
                        for c in 0..<cols {
                            var s = block[c * stride + r]
                            if options.scores == .products { scoreRow?[c] = s }
                            if softcap > 0 { s = softcap * tanh(s / softcap) }
                            if options.scores == .softcapped { scoreRow?[c] = s }
                            let bias = bias(position: position, key: j0 + c, validKeys: validKeys, mask: row)
                            if bias != -.infinity { allowed[r] = 1 }
                            s += bias
                            if options.scores.rawValue >= ScoresOutput.biased.rawValue { scoreRow?[c] = s }
                            block[c * stride + r] = s
                        }
                    }
                }
                // The online softmax, key by key over all rows at once (contiguous in the key-major
                // block), the exponentials in one vector call: the new maximum per row, the earlier
                // blocks' sum and output rescaled to it, then p = exp(s - maximum) and its sum.
                shift.update(repeating: -.infinity, count: rows)
                for c in 0..<cols {
                    let column = block + c * stride
                    for r in 0..<rows { shift[r] = max(shift[r], column[r]) }
                }
                for r in 0..<rows {
                    let newMaximum = max(maximum[r], shift[r])
                    // Every score so far -inf: exp(-inf - 0) is 0, nothing to rescale.
                    guard newMaximum != -.infinity else { shift[r] = 0; continue }
                    let correction = exp(maximum[r] - newMaximum)
                    sum[r] *= correction
                    if correction != 1 {
                        for p in 0..<dv { acc[r * dv + p] *= correction }
                    }
                    maximum[r] = newMaximum
                    shift[r] = newMaximum
                }
                for c in 0..<cols {
                    let column = block + c * stride
                    for r in 0..<rows { column[r] -= shift[r] }
                }
                lk_unary_f32(LK_EXP, block, block, cols * stride)
                for c in 0..<cols {
                    let column = block + c * stride
                    for r in 0..<rows { sum[r] += column[r] }
                }
                // acc += P V, P the block's probabilities (rows x cols, stored key-major).
                if dv > 0, lk_sgemm_f32(rows, dv, cols, 1, block, 1, stride, values.rows(b, kvHead) + j0 * values.rowStride,
                                        values.rowStride, acc, dv, nil, nil, 1) != 0 {
                    return false
                }
                j0 += cols
            }
            let (out, outStride) = (y.rows(b, h) + i0 * y.rowStride, y.rowStride)
            // A row with no allowed key (or only -inf scores) is zero, as ONNX specifies.
            let masked: Float = options.maskedRowsAreNaN ? .nan : 0
            for r in 0..<rows {
                let live = allowed[r] != 0 && sum[r] > 0
                let (row, accumulated, rowSum) = (out + r * outStride, acc + r * dv, sum[r])
                if live {
                    for p in 0..<dv { row[p] = accumulated[p] / rowSum }
                } else {
                    row.update(repeating: masked, count: dv)
                }
                if options.scores == .probabilities, let scoreRow = scoreRows.map({ $0 + r * total }) {
                    for j in 0..<total { scoreRow[j] = live ? exp(scoreRow[j] - maximum[r]) / sum[r] : 0 }
                }
            }
            return true
        }
    }
}
