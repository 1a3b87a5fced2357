/// The backward pass of the `Gemm` layer (ONNX Gemm with constant B and C,
/// and a 2-D MatMul with a constant B, `name` "MatMul"). With
/// `Y = alpha * A' * B' + beta * C` (A' = A or its transpose, `[N, K]`;
/// B' `[K, M]`):
///
/// - dL/dA' = alpha * dL/dY * B'^T, run through the runner as a `Gemm` of
///   weights B'^T (on the GPU when training there); with `transA` it is
///   transposed back to A's shape on the CPU.
/// - dL/dB' = alpha * A'^T * dL/dY on the CPU, transposed back with `transB`.
/// - dL/dC = beta * dL/dY summed over the axes C was broadcast along, of
///   C's shape (a scalar or `[1]`: the whole sum; `[M]` or `[1, M]`: the
///   column sums; `[N, 1]`: the row sums).
extension Gemm: DifferentiableLayer {
    /// `B` (node input 1) and, when given, `C` (node input 2), as given to
    /// the layer (B `[K, M]`, or `[M, K]` with `transB`).
    var trainableParameters: [TrainableParameter] {
        [TrainableParameter(role: "B", nodeInput: 1, value: b)]
            + (c.map { [TrainableParameter(role: "C", nodeInput: 2, value: $0)] } ?? [])
    }

    /// The same product (alpha, beta, transA, transB, name) with the new B and/or C.
    func replacingParameters(_ values: [String: Tensor]) throws -> Layer {
        let values = try checkedReplacements(values)
        guard let newB = values["B"] else { throw LayerKitError.invalidParameter("\(layerName): B is missing") }
        let layer = try Gemm(b: newB, c: values["C"], alpha: alpha, beta: beta, transA: transA, transB: transB,
                             name: layerName)
        layer.threadCount = threadCount
        return layer
    }

    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        let a = try step.checkedInputs(1, layer: layerName)[0]
        let n = try outputShapes(forInputShapes: [a.shape])[0][0]
        let dy = try step.checkedOutputGradient(0, layer: layerName)
        let (k, m) = (inputFeatures, outputFeatures)
        var result = LayerGradients(inputs: [nil])
        if step.needsGradient(ofInput: 0) {
            let product = try inputGradientLayers.layer(for: []) {
                try Gemm(b: weights, alpha: alpha, transB: true, name: "\(layerName) input gradient")
            }
            let da = try runner.run(product, [dy])[0]
            if transA {
                result.inputs[0] = try runner.cpu("\(layerName) input gradient transpose") { try MatrixGradients.transposed(da) }
            } else {
                result.inputs[0] = da
            }
        }
        if step.parameterRoles.contains("B") {
            result.parameters["B"] = try runner.cpu("\(layerName) B gradient (matrix product)") {
                // A'^T's element (p, i) is A'[i][p].
                let (aRow, aCol) = transA ? (n, 1) : (1, k)
                let db = try MatrixGradients.product(rows: k, columns: m, inner: n, alpha: alpha, a: a.dataPointer,
                                                     aRow: aRow, aCol: aCol, b: dy.dataPointer, ldb: m)
                return try transB ? MatrixGradients.transposed(db) : db
            }
        }
        if step.parameterRoles.contains("C"), let c {
            result.parameters["C"] = try runner.cpu("\(layerName) C gradient (broadcast sum)") {
                try MatrixGradients.reduced(dy, to: c.shape, scale: beta)
            }
        }
        return result
    }
}

/// The backward pass of `MatMulLayer`, whose operands are all graph inputs
/// (no trainable parameters: a MatMul or Gemm whose B is an initializer the
/// graph feeds in gets B's gradient as input gradient 1). On the CPU:
///
/// - Gemm form: dL/dA' = alpha * dL/dY * B'^T, dL/dB' = alpha * A'^T * dL/dY
///   (each transposed back with `transA` / `transB`), dL/dC = beta * dL/dY
///   summed over C's broadcast axes.
/// - MatMul (numpy matmul): per matrix of the broadcast batch, dL/dA_b +=
///   dL/dY_b * B_b^T and dL/dB_b += A_b^T * dL/dY_b, so an operand broadcast
///   along a batch axis sums that axis; a 1-D operand's gradient is 1-D.
extension MatMulLayer: ParameterFreeGradients {
    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        let inputs = try step.checkedInputs(hasC ? 3 : 2, layer: layerName)
        let g = try geometry(inputs.map(\.shape))
        let dy = try step.checkedOutputGradient(0, layer: layerName)
        let wanted = inputs.indices.map { step.needsGradient(ofInput: $0) }
        let gradients = try runner.cpu("\(layerName) input gradients (matrix products)") {
            try isGemm ? gemmGradients(inputs, dy, g, wanted) : matMulGradients(inputs, dy, g, wanted)
        }
        return LayerGradients(inputs: gradients)
    }

    /// Gemm's input gradients (A `[M, K]` or `[K, M]`, B `[K, N]` or `[N, K]`, C).
    private func gemmGradients(_ inputs: [Tensor], _ dy: Tensor, _ g: Geometry, _ wanted: [Bool]) throws -> [Tensor?] {
        let (a, b, m, k, n) = (inputs[0], inputs[1], g.m, g.k, g.n)
        var result: [Tensor?] = Array(repeating: nil, count: inputs.count)
        if wanted[0] {
            // B'^T row-major [N, K]: B itself with transB.
            let bt = try transB ? b : MatrixGradients.transposed(b)
            let da = try MatrixGradients.product(rows: m, columns: k, inner: n, alpha: alpha, a: dy.dataPointer,
                                                 aRow: n, aCol: 1, b: bt.dataPointer, ldb: k)
            result[0] = try transA ? MatrixGradients.transposed(da) : da
        }
        if wanted[1] {
            let (aRow, aCol) = transA ? (m, 1) : (1, k)
            let db = try MatrixGradients.product(rows: k, columns: n, inner: m, alpha: alpha, a: a.dataPointer,
                                                 aRow: aRow, aCol: aCol, b: dy.dataPointer, ldb: n)
            result[1] = try transB ? MatrixGradients.transposed(db) : db
        }
        if hasC, wanted[2] {
            result[2] = try MatrixGradients.reduced(dy, to: inputs[2].shape, scale: beta)
        }
        return result
    }

    /// MatMul's input gradients, summed over the batch axes each operand was broadcast along.
    private func matMulGradients(_ inputs: [Tensor], _ dy: Tensor, _ g: Geometry, _ wanted: [Bool]) throws -> [Tensor?] {
        let (a, b, m, k, n) = (inputs[0], inputs[1], g.m, g.k, g.n)
        let aOffsets = Self.matrixOffsets(g.a, batch: g.batch), bOffsets = Self.matrixOffsets(g.b, batch: g.batch)
        var result: [Tensor?] = [nil, nil]
        if wanted[0] {
            let da = try Tensor(shape: a.shape)
            // B_b^T row-major [N, K] at B_b's offset (the same matrix size).
            let bt = try MatrixGradients.transposed(b.reshaped(to: g.b))
            for (matrix, offset) in aOffsets.enumerated() {
                try MatrixGradients.accumulate(rows: m, columns: k, inner: n, alpha: 1, a: dy.dataPointer + matrix * m * n,
                                               aRow: n, aCol: 1, b: bt.dataPointer + bOffsets[matrix], ldb: k,
                                               into: da.dataPointer + offset, ldc: k)
            }
            result[0] = da
        }
        if wanted[1] {
            let db = try Tensor(shape: b.shape)
            for (matrix, offset) in bOffsets.enumerated() {
                try MatrixGradients.accumulate(rows: k, columns: n, inner: m, alpha: 1, a: a.dataPointer + aOffsets[matrix],
                                               aRow: 1, aCol: k, b: dy.dataPointer + matrix * m * n, ldb: n,
                                               into: db.dataPointer + offset, ldc: n)
            }
            result[1] = db
        }
        return result
    }
}
