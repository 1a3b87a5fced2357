import CKernels
import Synchronization

/// The Winograd path of `Convolution.evaluate` on the CPU: F(4x4, 3x3) or
/// F(2x2, 3x3) (`lk_winograd.h`) for 3x3 kernels of stride 1, dilation 1,
/// one group. The weights are transformed once per instruction set and
/// tile size, on first use, and kept by the layer.
extension Convolution {
    /// The CPU algorithm of a convolution: `automatic` lets `cpuAlgorithm(for:)`
    /// choose; the others force one where the shape allows it (for tests).
    enum CPUAlgorithm: Sendable, Equatable {
        case automatic, direct, winograd2, winograd4
    }

    /// An algorithm forced for the current task (tests); `.automatic` by default.
    @TaskLocal static var forcedCPUAlgorithm = CPUAlgorithm.automatic
    /// The instruction set the Winograd path runs on for the current task
    /// (tests); nil: the best this CPU has.
    @TaskLocal static var forcedWinogradISA: lk_isa? = nil

    /// Whether the Winograd kernels take this layer's shape at all.
    var winogradApplies: Bool {
        spatialRank == 2 && kernelHeight == 3 && kernelWidth == 3 && strides == [1, 1] && dilations == [1, 1]
            && group == 1
    }

    /// What `evaluate` runs for geometry `g`: `.direct` (lk_conv2d_f32),
    /// `.winograd4` or `.winograd2`.
    ///
    /// Measured (AMD EPYC, AVX-512, 1 thread, load ~8, medians of 20-30;
    /// direct -> F(4x4) / F(2x2)): 64->64 56x56 1.16 -> 0.70 / 1.10 ms;
    /// 128->128 28x28 1.28 -> 0.71 / 0.81 ms (F(4x4) from 20 rows and
    /// columns); 256->256 14x14 1.64 -> 1.35 / 0.84 ms; 512->512 7x7
    /// 3.0 -> 4.6 / 1.8 ms.
    /// F(4x4) pays where a map has enough tiles to fill the products' vector
    /// lanes and few padded ones; on 14x14 and smaller F(2x2) wastes fewer
    /// cells (7x7: 16 tiles of F(2x2) cover 8x8, F(4x4)'s 4 tiles cover 8x8
    /// but run 4-tile products). Few channels leave the products too short
    /// for the transforms' cost (see `winogradMinimumChannels`).
    func cpuAlgorithm(for g: Geometry) -> CPUAlgorithm {
        guard winogradApplies else { return .direct }
        switch Self.forcedCPUAlgorithm {
        case .automatic: break
        case let forced: return forced
        }
        guard inputChannels >= Self.winogradMinimumChannels, outputChannels >= Self.winogradMinimumChannels,
              min(g.outHeight, g.outWidth) >= Self.winogradMinimumExtent
        else { return .direct }
        return min(g.outHeight, g.outWidth) >= Self.winogradF4MinimumExtent ? .winograd4 : .winograd2
    }

    /// Input and output channels below which the direct loop stays as fast:
    /// 16->16 on 56x56 ran 0.076 ms either way, 32->32 1.09x faster by F(4x4),
    /// 8->8 on 112x112 0.5x (the transforms cost per channel what a short
    /// product saves).
    static let winogradMinimumChannels = 32
    /// Output rows and columns below which the direct path's channel-blocked
    /// loop is as fast on one thread and splits over output channels on
    /// more: 512->512 on 7x7, F(2x2) 0.98 ms against 0.99 ms direct on one
    /// thread, while two threads run the direct path in 0.60 ms and F(2x2)
    /// (16 tiles) stays on one.
    static let winogradMinimumExtent = 8
    /// Output rows and columns from which F(4x4) beats F(2x2).
    static let winogradF4MinimumExtent = 20

    /// Tiles a thread's share must hold for a second thread to pay: every
    /// thread streams all the transformed weights, used once per tile. 512->512
    /// on 7x7 (16 tiles of F(2x2), 16 MiB of weights) ran 1.6x slower on two
    /// threads (8 tiles each) than on one; 128->128 on 28x28 and 256->256 on
    /// 14x14 (49 tiles) ran up to 1.9x faster.
    static let winogradMinimumTilesPerThread = 16

    /// Runs the convolution by Winograd when `cpuAlgorithm(for:)` says so,
    /// with the fused `epilogue` (if any) applied to each chunk of rows as
    /// it is finished; false: the caller runs the direct path.
    func evaluateWinograd(inputs: [Tensor], outputs: [Tensor], geometry g: Geometry,
                          epilogue: Epilogue? = nil, residual: Tensor? = nil) throws -> Bool {
        let tile: Int32
        switch cpuAlgorithm(for: g) {
        case .winograd4: tile = 4
        case .winograd2: tile = 2
        case .direct, .automatic: return false
        }
        let isa = Self.forcedWinogradISA ?? lk_kernels_isa()
        guard isa.rawValue <= lk_kernels_isa().rawValue else {
            throw LayerKitError.unsupported("Conv: this CPU lacks \(String(cString: lk_isa_name(isa)))")
        }
        let packed = try winogradState.weights(of: weights, isa: isa, tile: tile)
        guard packed.finite else { return false }
        var shape = kernelShape(for: g)
        let (input, output, bias, weights, channels) = (inputs[0], outputs[0], bias, weights, outputChannels)
        let tileRows = (g.outHeight + Int(tile) - 1) / Int(tile)
        let work = output.count * weights.count / outputChannels
        let tiles = g.batch * tileRows * ((g.outWidth + Int(tile) - 1) / Int(tile))
        let threads = min(threadCount, CPUThreads.current, max(1, work / Self.minimumWorkPerThread),
                          max(1, tiles / Self.winogradMinimumTilesPerThread))
        let rowsPerChunk = Self.tileRowsPerChunk(tileRows: tileRows, batch: g.batch, threads: threads)
        let chunksPerImage = (tileRows + rowsPerChunk - 1) / rowsPerChunk
        let failed = Atomic(false)
        withUnsafePointer(to: &shape) { shapePointer in
            let shape = SendableShape(pointer: shapePointer)
            forEachChunk(count: g.batch * chunksPerImage, chunkSize: 1, threadCount: threads) { range in
                for i in range {
                    let (n, first) = (i / chunksPerImage, i % chunksPerImage * rowsPerChunk)
                    // The item's output rows and pixels.
                    let rows = first * Int(tile)..<min(g.outHeight, (first + rowsPerChunk) * Int(tile))
                    let segment = rows.lowerBound * g.outWidth..<rows.upperBound * g.outWidth
                    let (inOffset, outOffset) = (n * input.count / g.batch, n * output.count / g.batch)
                    let (x, y) = (input.dataPointer + inOffset, output.dataPointer + outOffset)
                    var status = lk_winograd_conv2d_f32(
                        isa, tile, shape.pointer, x, packed.pointer, bias?.dataPointer, y, first, rowsPerChunk)
                    if status == 1 {
                        // An inf or NaN input cell: the direct sum keeps IEEE results per output.
                        status = lk_conv2d_f32(shape.pointer, x, weights.dataPointer, bias?.dataPointer, y,
                                               segment.lowerBound, segment.count)
                    }
                    if status != 0 { failed.store(true, ordering: .relaxed) }
                    // The epilogue point: `segment` of image n is final (all output channels).
                    epilogue?.apply(output: y, residual: residual.map { UnsafePointer($0.dataPointer + outOffset) },
                                    channels: 0..<channels, pixels: g.outHeight * g.outWidth, segment: segment)
                }
            }
        }
        if failed.load(ordering: .relaxed) {
            throw LayerKitError.unsupported("Conv: out of memory for the Winograd work buffer")
        }
        return true
    }

    /// Tile rows a work item: one chunk a thread when the rows split evenly
    /// enough, else up to three a thread, whichever finishes first counting
    /// whole rows (14 tile rows on 2 threads: 7 + 7, where a fixed two chunks a
    /// thread gave 4 + 4 + 4 + 2, one thread doing 8).
    static func tileRowsPerChunk(tileRows: Int, batch: Int, threads: Int) -> Int {
        guard threads > 1 else { return tileRows }
        var best = (span: Int.max, rows: tileRows)
        for perThread in 1...3 {
            let rows = max(1, (tileRows * batch + threads * perThread - 1) / (threads * perThread))
            let perImage = min(rows, tileRows)
            let chunks = batch * ((tileRows + perImage - 1) / perImage)
            let span = (chunks + threads - 1) / threads * perImage
            if span < best.span { best = (span, perImage) }
        }
        return best.rows
    }
}

/// The transformed weights of one convolution for each instruction set and
/// tile size it ran with, made on first use under a lock.
final class WinogradState: Sendable {
    private let packs = Mutex<[Int: WinogradWeights]>([:])

    init() {}

    func weights(of weights: Tensor, isa: lk_isa, tile: Int32) throws -> WinogradWeights {
        try packs.withLock { packs in
            let key = Int(isa.rawValue) * 8 + Int(tile)
            if let made = packs[key] { return made }
            let made = try WinogradWeights(weights: weights, isa: isa, tile: tile)
            packs[key] = made
            return made
        }
    }
}

/// Weights `[M, C, 3, 3]` transformed by `lk_winograd_pack_weights`.
final class WinogradWeights: @unchecked Sendable {
    /// Read-only once made.
    let pointer: UnsafeMutablePointer<Float>
    /// False when a weight is inf or NaN: the transform would spread it over
    /// whole tiles, so the layer runs the direct path.
    let finite: Bool

    init(weights: Tensor, isa: lk_isa, tile: Int32) throws {
        let (m, c) = (weights.shape[0], weights.shape[1])
        let count = lk_winograd_weights_floats(isa, tile, m, c)
        pointer = .allocate(capacity: max(1, count))
        let status = lk_winograd_pack_weights(isa, tile, m, c, weights.dataPointer, pointer)
        finite = status == 0
        guard status == 0 || status == 1 else {
            pointer.deallocate()
            throw LayerKitError.unsupported("Conv: Winograd weights for tile \(tile) on \(String(cString: lk_isa_name(isa)))")
        }
    }

    deinit { pointer.deallocate() }
}
