/// The evaluator's Swish entry points, for tests that pick threads and
/// instruction sets; users run the `Swish` layer (`evaluate`).
extension CPUEvaluator {
    /// Swish, `y = x / (1 + exp(-beta * x))`, with one `beta` for all elements.
    ///
    /// Results are within 1e-5 relative of the exact value (about 3e-7 in
    /// practice) wherever they are normal floats; smaller results may come
    /// out as +-0. For beta > 0, swish(+inf) = +inf and swish(-inf) = -0
    /// (the limits); NaN stays NaN.
    /// - Throws: ``LayerKitError/shapeMismatch(_:)`` if the shapes differ,
    ///   ``LayerKitError/invalidParameter(_:)`` if `beta` is not finite.
    func swish(_ input: Tensor, into output: Tensor, beta: Float) throws {
        try checkSameShape(input, output, op: "Swish")
        guard beta.isFinite else {
            throw LayerKitError.invalidParameter("Swish: beta must be finite, got \(beta)")
        }
        try run(swishProgram(scalars: ["beta": beta], channelValues: [:]), input: input, output: output, op: "Swish")
    }

    /// Swish with a `beta` per channel: channel `c` (axis 1, as in
    /// ``Tensor/nchwShape(_:)``) of every item uses `channelBeta[c]`.
    /// - Throws: ``LayerKitError/shapeMismatch(_:)`` if the shapes differ,
    ///   ``LayerKitError/invalidWeights(_:)`` if
    ///   `channelBeta` does not hold one finite value per channel.
    func swish(_ input: Tensor, into output: Tensor, channelBeta: [Float]) throws {
        try checkSameShape(input, output, op: "Swish")
        let channels = Self.channels(of: input.shape)
        guard channelBeta.count == channels else {
            throw LayerKitError.invalidWeights(
                "Swish: expected \(channels) per-channel beta values for input \(Tensor.describe(input.shape)), got \(channelBeta.count)")
        }
        if let bad = channelBeta.firstIndex(where: { !$0.isFinite }) {
            throw LayerKitError.invalidWeights(
                "Swish: beta of channel \(bad) must be finite, got \(channelBeta[bad])")
        }
        try run(swishProgram(scalars: [:], channelValues: ["beta": channelBeta]), input: input, output: output,
                op: "Swish")
    }

    /// The catalog's Swish formula, which compiles to the fused C kernel.
    private func swishProgram(scalars: [String: Float], channelValues: [String: [Float]]) throws -> CPUProgram {
        guard let definition = Swish.definition else { throw LayerKitError.unknownOp("the catalog has no Swish") }
        return try CPUProgram(FormulaChain(stages: [.init(name: "Swish", formula: definition.formula,
                                                          scalars: scalars, channelValues: channelValues)]))
    }
}
