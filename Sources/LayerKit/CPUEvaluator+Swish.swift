import CKernels

extension CPUEvaluator {
    /// Swish, `y = x / (1 + exp(-beta * x))`, with one `beta` for all elements.
    ///
    /// Results are within 1e-5 relative of the exact value (about 3e-7 in
    /// practice) wherever they are normal floats; smaller results may come
    /// out as +-0. For beta > 0, swish(+inf) = +inf and swish(-inf) = -0
    /// (the limits); NaN stays NaN.
    /// - Throws: ``LayerKitError/shapeMismatch(_:)`` if the shapes differ,
    ///   ``LayerKitError/invalidParameter(_:)`` if `beta` is not finite.
    public func swish(_ input: Tensor, into output: Tensor, beta: Float) throws {
        try checkSameShape(input, output, op: "Swish")
        guard beta.isFinite else {
            throw LayerKitError.invalidParameter("Swish: beta must be finite, got \(beta)")
        }
        let isa = self.isa
        forEachChunk(count: input.count, threadCount: threadCount) { range in
            swishKernel(isa, input, output, range, beta: beta)
        }
    }

    /// Swish with a `beta` per channel: `input` is read as NCHW (see
    /// ``Tensor/nchw()``) and channel `c` of every image uses `channelBeta[c]`.
    /// - Throws: ``LayerKitError/shapeMismatch(_:)`` if the shapes differ or
    ///   the rank is above 4, ``LayerKitError/invalidWeights(_:)`` if
    ///   `channelBeta` does not hold one finite value per channel.
    public func swish(_ input: Tensor, into output: Tensor, channelBeta: [Float]) throws {
        try checkSameShape(input, output, op: "Swish")
        let (_, channels, height, width) = try input.nchw()
        guard channelBeta.count == channels else {
            throw LayerKitError.invalidWeights(
                "Swish: expected \(channels) per-channel beta values for input \(Tensor.describe(input.shape)), got \(channelBeta.count)")
        }
        if let bad = channelBeta.firstIndex(where: { !$0.isFinite }) {
            throw LayerKitError.invalidWeights(
                "Swish: beta of channel \(bad) must be finite, got \(channelBeta[bad])")
        }
        let isa = self.isa
        let plane = height * width
        forEachChunk(count: input.count, threadCount: threadCount) { range in
            // A chunk may span planes: run the kernel once per plane piece,
            // with that plane's beta.
            var start = range.lowerBound
            while start < range.upperBound {
                let planeIndex = start / plane
                let end = min(range.upperBound, (planeIndex + 1) * plane)
                swishKernel(isa, input, output, start..<end, beta: channelBeta[planeIndex % channels])
                start = end
            }
        }
    }
}

/// The C kernel on `range` of `input`, written to the same range of `output`.
/// Kept out of closures created in actor-isolated code so the hot call has no
/// executor checks.
private func swishKernel(_ isa: lk_isa, _ input: Tensor, _ output: Tensor, _ range: Range<Int>,
                         beta: Float) {
    // Cannot fail: CPUEvaluator only holds ISAs this CPU supports.
    _ = lk_swish_f32_isa(isa, input.dataPointer + range.lowerBound,
                         output.dataPointer + range.lowerBound, range.count, beta)
}
