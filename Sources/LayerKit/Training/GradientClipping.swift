import Foundation

/// Gradient-norm clipping over all parameters together, as
/// torch.nn.utils.clip_grad_norm_ with the L2 norm.
public enum GradientClipping {
    /// The total L2 norm of every gradient, `sqrt(sum over all elements of g^2)`,
    /// summed in Double in the order of the names sorted, then element order
    /// (deterministic).
    public static func totalNorm(_ gradients: [String: Tensor]) -> Double {
        var sum = 0.0
        for (_, gradient) in gradients.sorted(by: { $0.key < $1.key }) {
            for g in gradient.elements { sum += Double(g) * Double(g) }
        }
        return sqrt(sum)
    }

    /// `gradients` scaled so their total norm is at most `maxNorm`: with
    /// `norm = totalNorm(gradients)` and `scale = maxNorm / (norm + 1e-6)`,
    /// each gradient element becomes `Float(Double(g) * scale)` when
    /// `scale < 1`; otherwise the gradients are returned as they are (the
    /// same tensors). Returns the norm before clipping too. Throws
    /// `LayerKitError.invalidParameter` when `maxNorm` is not positive and
    /// finite, or the norm is not finite (naming the first parameter with a
    /// NaN or infinite gradient).
    public static func clip(_ gradients: [String: Tensor], maxNorm: Double) throws
        -> (gradients: [String: Tensor], totalNorm: Double) {
        guard maxNorm.isFinite, maxNorm > 0 else {
            throw LayerKitError.invalidParameter("gradient clipping: max norm \(maxNorm), must be positive and finite")
        }
        let norm = totalNorm(gradients)
        guard norm.isFinite else {
            let name = gradients.keys.sorted().first { gradients[$0]!.elements.contains { !$0.isFinite } }
            throw LayerKitError.invalidParameter(
                "gradient clipping: the gradient norm is \(norm)" + (name.map { " (parameter \($0) has a NaN or infinite gradient)" } ?? ""))
        }
        let scale = maxNorm / (norm + 1e-6)
        guard scale < 1 else { return (gradients, norm) }
        var clipped: [String: Tensor] = [:]
        for (name, gradient) in gradients {
            let result = try Tensor(shape: gradient.shape)
            for (i, g) in gradient.elements.enumerated() { result[i] = Float(Double(g) * scale) }
            clipped[name] = result
        }
        return (clipped, norm)
    }
}
