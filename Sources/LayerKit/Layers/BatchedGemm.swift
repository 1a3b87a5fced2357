import Foundation

/// A `MatMul` of a computed rank-3 or rank-4 value `[..., M, K]` by a
/// constant `[K, N]`, with an optional constant bias of N values added: a
/// transformer's Linear layer as exporters write it (MatMul by an
/// initializer, then Add of one), or a Gemm between Reshapes to and from
/// `[rows, K]` (GPT-2's Conv1D). `ModelGraph.fuseBatchedGemms()` and
/// `fuseReshapedGemms()` make it from those steps at inference; training
/// keeps the plain steps.
///
/// CPU: the Gemm on the same row-major elements read as `[rows, K]` (B'
/// packed once, as for any Gemm). GPU: `Shaders/batched_gemm.comp`, the
/// weights in a buffer in fp32, since `[K, N]` as an image needs K·N/4
/// array layers.
final class BatchedGemm: Layer {
    /// The product on `[rows, K]`: B' and the bias as its per-column C.
    let gemm: Gemm
    /// "MatMul", "MatMul+Add", or the wrapped Gemm's name.
    let layerName: String
    /// The pipeline and the weights-and-bias buffer, per context.
    private let gpuState = PerContext<(kernel: GPUKernel<BatchedGemmConstants>, weights: GPUBuffer)>()

    /// The product by `b` (`[K, N]`) plus `bias` (N values), named
    /// "MatMul" or "MatMul+Add".
    init(b: Tensor, bias: Tensor?) throws {
        gemm = try Gemm(b: b, c: bias.map { try $0.reshaped(to: [$0.count]) }, alpha: 1, beta: 1, transA: false,
                        transB: false, name: "MatMul", convolutionForm: false)
        layerName = bias == nil ? "MatMul" : "MatMul+Add"
    }

    /// `gemm` on the rows of a rank-3 or rank-4 input, or nil when it has no
    /// such form: A transposed, or C per row or whole (which fix the rows).
    /// Shares `gemm` (its B' and packed panels), copying nothing.
    init?(gemm: Gemm) {
        guard !gemm.transA, gemm.fitsEveryRowCount else { return nil }
        (self.gemm, layerName) = (gemm, gemm.layerName)
    }

    /// `[..., M, N]` for `[..., M, K]` of rank 3 or more.
    func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        guard shape.count >= 3, shape[shape.count - 1] == gemm.inputFeatures else {
            throw LayerKitError.shapeMismatch("\(layerName): A \(Tensor.describe(shape)) is not [..., M, "
                                              + "\(gemm.inputFeatures)] of rank 3 or more")
        }
        return [Array(shape.dropLast()) + [gemm.outputFeatures]]
    }

    /// The Gemm on views of the input and output as matrices.
    func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let expected = try outputShapes(forInputShapes: inputs.map(\.shape))
        try LayerChecks.requireOutput(outputs, expected[0], layer: layerName)
        let rows = inputs[0].count / gemm.inputFeatures
        let a = try Tensor(viewing: inputs[0].dataPointer, shape: [rows, gemm.inputFeatures], owner: inputs[0])
        let y = try Tensor(viewing: outputs[0].dataPointer, shape: [rows, gemm.outputFeatures], owner: outputs[0])
        try gemm.evaluate(inputs: [a], outputs: [y])
    }

    var hasGPUImplementation: Bool { true }

    /// Creates the pipeline and uploads B' and the bias, once per context.
    func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try prepared(on: context) }

    private func prepared(on context: GPUContext) throws -> (kernel: GPUKernel<BatchedGemmConstants>, weights: GPUBuffer) {
        try gpuState.value(on: context) {
            let bias = gemm.addend.map { Array($0.tensor.elements) } ?? Array(repeating: 0, count: gemm.outputFeatures)
            return (try BuiltInShaders.batchedGemm.kernel(on: context),
                    try context.makeBuffer(floats: gemm.weights.elements.map { gemm.alpha * $0 } + bias))
        }
    }

    /// Rank 3 `[B, M, K]` is a `B×M×K×1` image (K along H), rank 4 a
    /// `B×C×M×K` one (K along W); the output likewise with N for K.
    func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1 else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image and 1 output image")
        }
        let (a, y) = (inputs[0], outputs[0])
        let (k, n) = (gemm.inputFeatures, gemm.outputFeatures)
        let alongWidth = a.width == k && y.width == n && y.height == a.height
        let alongHeight = a.width == 1 && y.width == 1 && a.height == k && y.height == n
        guard alongWidth || alongHeight, a.batch == y.batch, a.featureChannels == y.featureChannels else {
            throw LayerKitError.shapeMismatch("\(layerName): images \(Tensor.describe(a.shape)) and "
                                              + "\(Tensor.describe(y.shape)) are not rows of \(k) and \(n)")
        }
        // When both hold, H is 1 and K and N are 1: either reading is the same product.
        let state = try prepared(on: commandBuffer.context)
        let constants = BatchedGemmConstants(shape: y.shapeConstants, inner: UInt32(k), columns: UInt32(n),
                                             alongHeight: alongWidth ? 0 : 1)
        try commandBuffer.dispatch(state.kernel, images: [a, y], buffers: [state.weights], constants: constants,
                                   threads: alongWidth ? (n, y.height, y.layers) : (n, y.layers, 1))
    }
}
