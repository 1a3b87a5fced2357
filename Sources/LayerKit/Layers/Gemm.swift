import CKernels
import Foundation
import Synchronization

/// ONNX `Gemm`, `Y = alpha * A' * B' + beta * C`, with A the one input
/// (`[N, K]`, or `[K, N]` with `transA`), B a constant (`[K, M]`, or
/// `[M, K]` with `transB`) and C an optional constant broadcast to `[N, M]`
/// (a scalar, `[M]`, `[1, M]`, `[N, 1]` or `[N, M]`). A 2-D `MatMul` with a
/// constant B is `Gemm(b: B, name: "MatMul")`.
///
/// CPU: `lk_sgemm_f32` (one or two rows with transB: `lk_sgemv_f32_bt`),
/// output columns split over threads when large. GPU
/// (when C is absent or one value per output column and A is not
/// transposed): a 1x1 ``Convolution`` of the `N×K×1×1` input image with
/// weights `alpha * B'` and bias `beta * C`; otherwise the layer has no GPU
/// implementation and a model runs it on the CPU.
public final class Gemm: Layer {
    /// The op name in reports: "Gemm", or "MatMul" for a MatMul made into one.
    public let layerName: String
    /// alpha.
    public let alpha: Float
    /// Whether the input is `[K, N]`.
    public let transA: Bool
    /// K: the input's inner extent.
    public let inputFeatures: Int
    /// M: the output's columns.
    public let outputFeatures: Int
    /// The most threads `evaluate` uses (one per core by default; a run's
    /// `Backend.threads` caps it); small
    /// products run on the calling thread alone.
    public var threadCount = activeProcessorCount

    /// B' as `[K, M]`, row-major: B transposed if `transB`, else `b` itself.
    let weights: Tensor
    /// beta * C, as the CPU adds it.
    let addend: Addend?
    /// B as given, for training (its gradient has this shape): the caller's
    /// tensor, not a copy (a decoder's output projection is 154 MB; the
    /// product reads its own B'), so it must not be changed after.
    let b: Tensor
    /// C as given, if any, for training (its gradient has this shape): the caller's tensor, as `b`.
    let c: Tensor?
    /// beta.
    let beta: Float
    /// Whether B is given as `[M, K]`.
    let transB: Bool
    /// The product giving the input gradient (Training/Gemm+Gradients.swift).
    let inputGradientLayers = KeyedLayerCache<Gemm>()
    /// Whether the product has a GPU form: A not transposed, C absent or one value per column.
    public let hasGPUImplementation: Bool
    /// The GPU form (`convolution()`), made on first use.
    private let gpuForm = KeyedLayerCache<Convolution>()
    /// B' packed once (`lk_sgemm_pack_b`) for `packedISA` on the second run
    /// with more than two rows, and the runs of more than two rows before
    /// it: lk_sgemm_f32 re-packs every 256 x nr panel of B for every 120
    /// rows of A on every call, which a run that repeats gains from doing
    /// once; one run alone packs as much either way, and the whole copy
    /// costs it the allocation besides (a GPT-2 prompt, the one run of a
    /// `generate` with more than two rows: 1.4 s of packing and page faults
    /// for 0.5 GB of copies). Runs of one or two rows (a classifier's batch
    /// 1, a decode step) never pack: they stream B once, as given with
    /// transB (`lk_sgemv_f32_bt`), else B' row-major.
    private let packedB = Mutex<(runs: Int, panels: [Float]?)>((0, nil))
    private let packedISA = lk_kernels_isa()

    /// How beta * C is added: per output column, per output row, or whole.
    enum Addend {
        /// `[M]` values (C a scalar, `[M]`, `[1, M]`).
        case columns(Tensor)
        /// `[N]` values (C `[N, 1]`, N > 1).
        case rows(Tensor)
        /// `[N, M]` values.
        case full(Tensor)

        var tensor: Tensor {
            switch self { case .columns(let t), .rows(let t), .full(let t): t }
        }

        /// Readies columns `columns` of the `rows` x `stride` output `y` for
        /// a product added onto C: a whole C is copied there (and the product
        /// accumulates onto it), a per-row or per-column one is returned as
        /// the kernels' bias for those columns.
        func start(_ y: UnsafeMutablePointer<Float>, rows n: Int, stride m: Int, columns: Range<Int>)
            -> (rowBias: UnsafePointer<Float>?, columnBias: UnsafePointer<Float>?, accumulate: Int32) {
            switch self {
            case .full(let c):
                for i in 0..<n {
                    (y + i * m + columns.lowerBound).update(from: c.dataPointer + i * m + columns.lowerBound,
                                                            count: columns.count)
                }
                return (nil, nil, 1)
            case .rows(let c): return (UnsafePointer(c.dataPointer), nil, 0)
            case .columns(let c): return (nil, UnsafePointer(c.dataPointer + columns.lowerBound), 0)
            }
        }
    }

    /// Makes the layer; throws `LayerKitError.invalidWeights` or
    /// `.invalidParameter` for a B or C that cannot fit, or a non-finite
    /// alpha or beta. The layer computes with `b` itself (a transposed copy
    /// with transB) and keeps `b` and `c` for training, so leave them unchanged.
    public convenience init(b: Tensor, c: Tensor? = nil, alpha: Float = 1, beta: Float = 1, transA: Bool = false,
                            transB: Bool = false, name: String = "Gemm") throws {
        try self.init(b: b, c: c, alpha: alpha, beta: beta, transA: transA, transB: transB, name: name,
                      convolutionForm: true)
    }

    /// With `convolutionForm` false the 1x1 convolution is not made (nor
    /// its copy of the weights): for a product whose GPU form is another
    /// (`BatchedGemm`).
    init(b: Tensor, c: Tensor?, alpha: Float, beta: Float, transA: Bool, transB: Bool, name: String,
         convolutionForm: Bool) throws {
        guard b.shape.count == 2, b.count > 0 else {
            throw LayerKitError.invalidWeights("\(name): B must be a non-empty matrix, got \(Tensor.describe(b.shape))")
        }
        guard alpha.isFinite, beta.isFinite else {
            throw LayerKitError.invalidParameter("\(name): alpha and beta must be finite, got \(alpha) and \(beta)")
        }
        let (k, m) = transB ? (b.shape[1], b.shape[0]) : (b.shape[0], b.shape[1])
        (layerName, self.alpha, self.transA, inputFeatures, outputFeatures) = (name, alpha, transA, k, m)
        // Not transposed, B is B': the caller's tensor (left unchanged, as `b`), not a copy (GPT-2 small's 0.5 GB).
        weights = transB ? try MatrixGradients.transposed(b) : b
        (self.b, self.c) = (b, c)
        (self.beta, self.transB) = (beta, transB)
        addend = try c.map { try Self.addend(c: $0, beta: beta, columns: m, name: name) }
        switch addend {
        case .columns, nil: hasGPUImplementation = convolutionForm && !transA
        case .rows, .full: hasGPUImplementation = false
        }
    }

    /// The 1x1 convolution the product runs as on the GPU (its own copy of
    /// B' with alpha folded in), or nil without a GPU form. Made on the
    /// first GPU use: a run on the CPU alone never holds that copy.
    func convolution() throws -> Convolution? {
        guard hasGPUImplementation else { return nil }
        return try gpuForm.layer(for: []) { try convolution(kernel: [inputFeatures, 1, 1]) }
    }

    /// The GPU form if a GPU run made it already (nil otherwise, making nothing).
    var madeConvolution: Convolution? { gpuForm.current }

    /// The product as a convolution whose kernel, `kernel` extents
    /// (`[C, kH, kW]`, K values in all), reads the K inputs in order: output
    /// j's weights are column j of B' times alpha; the bias is C. A 1x1
    /// convolution of an `N×K×1×1` image, or one covering a whole map
    /// (`FlattenedGemm`).
    func convolution(kernel extents: [Int]) throws -> Convolution {
        let (m, k) = (outputFeatures, inputFeatures)
        guard extents.count == 3, extents.reduce(1, *) == k else {
            throw LayerKitError.shapeMismatch("\(layerName): a kernel of \(Tensor.describe(extents)) does not hold K = \(k)")
        }
        let kernel = try Tensor(shape: [m] + extents)
        for p in 0..<k {
            let row = weights.dataPointer + p * m
            for j in 0..<m { kernel.dataPointer[j * k + p] = alpha * row[j] }
        }
        return try Convolution(weights: kernel, bias: addend?.tensor)
    }

    /// beta * C in the form the CPU adds it; throws if C cannot broadcast to `[N, columns]`.
    private static func addend(c: Tensor, beta: Float, columns m: Int, name: String) throws -> Addend {
        let shape = c.shape
        let scaled = try Tensor(shape: shape, values: c.values.map { beta * $0 })
        if c.count == 1 {
            return .columns(try Tensor(shape: [m], values: Array(repeating: scaled[0], count: m)))
        }
        switch shape.count {
        case 1 where shape[0] == m: return .columns(scaled)
        case 2 where shape == [1, m]: return .columns(try scaled.reshaped(to: [m]))
        case 2 where shape[1] == 1: return .rows(try scaled.reshaped(to: [shape[0]]))
        case 2 where shape[1] == m: return .full(scaled)
        default:
            throw LayerKitError.invalidWeights(
                "\(name): C \(Tensor.describe(shape)) does not broadcast to [N, \(m)] (use a scalar, [\(m)], [1, \(m)], [N, 1] or [N, \(m)])")
        }
    }

    /// Whether every A of the inner extent K fits, whatever its row count:
    /// true unless C is per row or full (which fixes the rows).
    var fitsEveryRowCount: Bool {
        switch addend {
        case .columns, nil: true
        case .rows, .full: false
        }
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        guard shape.count == 2 else {
            throw LayerKitError.shapeMismatch("\(layerName): A must be a matrix, got \(Tensor.describe(shape))")
        }
        let (n, k) = transA ? (shape[1], shape[0]) : (shape[0], shape[1])
        guard k == inputFeatures else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): A \(Tensor.describe(shape))\(transA ? " (transposed)" : "") has inner extent \(k); "
                + "B' needs \(inputFeatures)")
        }
        switch addend {
        case .rows(let c), .full(let c):
            guard c.shape[0] == n else {
                throw LayerKitError.shapeMismatch("\(layerName): C has \(c.shape[0]) rows; A' has \(n)")
            }
        case .columns, nil: break
        }
        return [[n, outputFeatures]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        try evaluate(inputs: inputs, outputs: outputs, epilogue: nil, residual: nil)
    }

    /// `evaluate(inputs:outputs:)` with a fused epilogue applied to each
    /// chunk of output columns as soon as it is written, on its thread;
    /// `residual` has the output's shape.
    func evaluate(inputs: [Tensor], outputs: [Tensor], epilogue: Epilogue?, residual: Tensor?) throws {
        let expected = try outputShapes(forInputShapes: inputs.map(\.shape))
        guard outputs.map(\.shape) == expected else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): outputs \(outputs.map(\.shape).map(Tensor.describe)) given, \(expected.map(Tensor.describe)) expected")
        }
        let (a, y, weights, addend, alpha) = (inputs[0], outputs[0], weights, addend, alpha)
        let (n, m, k) = (expected[0][0], outputFeatures, inputFeatures)
        let (aRow, aCol) = transA ? (1, n) : (k, 1)
        let panels = n > 2 ? packedPanels() : nil
        // One or two rows with transB: B's own rows, read once in order.
        let rowsOfB = n <= 2 && transB ? b : nil
        let isa = packedISA
        // One or two rows read 4 bytes of B a multiply-add: bound by a
        // core's memory bandwidth, so a second thread pays from an eighth
        // of the work (resnet18's 512 -> 1000 classifier, 2 MB of B).
        let perThread = Convolution.minimumWorkPerThread / (n <= 2 ? 8 : 1)
        let threads = min(threadCount, CPUThreads.current, max(1, n * m * k / perThread))
        if n <= 2, rowsOfB == nil, k > Self.fewRowsBlock {
            return try evaluateFewRows(a: a, aRow: aRow, aCol: aCol, y: y, rows: n, threads: threads, epilogue: epilogue,
                                       residual: residual)
        }
        // Two chunks a thread balance the blocked product; one or two rows take
        // one chunk a thread, so each streams the longest runs of B's rows.
        let chunksPerThread = n <= 2 ? 1 : 2
        let chunk = threads == 1 ? m
            : max(64, ((m + chunksPerThread * threads - 1) / (chunksPerThread * threads) + 63) & ~63)
        let failed = Atomic(false)
        forEachChunk(count: m, chunkSize: chunk, threadCount: threads) { columns in
            let (j0, width) = (columns.lowerBound, columns.count)
            let (rowBias, columnBias, accumulate) = addend?.start(y.dataPointer, rows: n, stride: m, columns: columns)
                ?? (nil, nil, 0)
            // Chunks start on multiples of 64 columns: on a panel of B'.
            let status = rowsOfB.map { b in
                lk_sgemv_f32_bt(isa, n, width, k, alpha, a.dataPointer, aRow, aCol, b.dataPointer + j0 * k, k,
                                y.dataPointer + j0, m, rowBias, columnBias, accumulate)
            } ?? panels.map { panels in
                panels.withUnsafeBufferPointer {
                    lk_sgemm_f32_packed_b(isa, n, width, k, alpha, a.dataPointer, aRow, aCol,
                                          $0.baseAddress.map { $0 + j0 * k }, y.dataPointer + j0, m, rowBias,
                                          columnBias, accumulate)
                }
            } ?? lk_sgemm_f32(n, width, k, alpha, a.dataPointer, aRow, aCol, weights.dataPointer + j0, m,
                              y.dataPointer + j0, m, rowBias, columnBias, accumulate)
            if status != 0 {
                failed.store(true, ordering: .relaxed)
            }
            // The epilogue point: these columns of every row are final.
            epilogue?.apply(matrix: y.dataPointer, residual: residual.map { UnsafePointer($0.dataPointer) },
                            rows: n, stride: m, columns: columns)
        }
        if failed.load(ordering: .relaxed) {
            throw LayerKitError.unsupported("\(layerName): out of memory for its work buffers")
        }
    }

    /// B' packed for `packedISA`, made on the second call (under the lock,
    /// once); nil on the first.
    private func packedPanels() -> [Float]? {
        packedB.withLock { state in
            if let panels = state.panels { return panels }
            state.runs += 1
            guard state.runs > 1 else { return nil }
            let (k, m, isa, weights) = (inputFeatures, outputFeatures, packedISA, weights)
            let values = [Float](unsafeUninitializedCapacity: lk_sgemm_packed_b_size(isa, k, m)) { buffer, count in
                _ = lk_sgemm_pack_b(isa, k, m, weights.dataPointer, m, buffer.baseAddress)
                count = buffer.count
            }
            state.panels = values
            return values
        }
    }

    /// Prepares the 1x1 convolution the product runs as (see `encode`).
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws {
        try convolution()?.prepare(on: context, inputShapes: inputShapes)
    }

    /// Encodes the product as a 1x1 convolution of the `N×K×1×1` input image
    /// into the `N×M×1×1` output image.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        try encode(commandBuffer: commandBuffer, inputs: inputs, outputs: outputs, epilogue: nil)
    }

    /// `encode(commandBuffer:inputs:outputs:)` with a fused epilogue (see
    /// `Convolution.encode(commandBuffer:inputs:outputs:epilogue:)`).
    func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage],
                epilogue: (kernel: GPUKernel<ConvolutionConstants>, bindings: [GPUBinding])?) throws {
        guard let convolution = try convolution() else {
            throw LayerKitError.unsupported(
                "\(layerName) runs on the GPU only with A not transposed and C absent or one value per column")
        }
        for image in inputs + outputs where image.height != 1 || image.width != 1 {
            throw LayerKitError.shapeMismatch(
                "\(layerName): images must be N×K×1×1 and N×M×1×1 (matrices), got \(Tensor.describe(image.shape))")
        }
        let expected = try outputShapes(forInputShapes: inputs.map { Array($0.shape.prefix(2)) })
        guard outputs.map({ Array($0.shape.prefix(2)) }) == expected else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): output image \(outputs.map(\.shape).map(Tensor.describe)) given, \(expected.map(Tensor.describe)) expected")
        }
        try convolution.encode(commandBuffer: commandBuffer, inputs: inputs, outputs: outputs, epilogue: epilogue)
    }
}

