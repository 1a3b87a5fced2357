import Foundation

extension Loss {
    /// `mean((p - t)^2)` and `2 (p - t) / count`.
    static func meanSquaredError(_ prediction: Tensor, _ target: Tensor) throws -> LossResult {
        try elementwise(prediction, target, .meanSquaredError) { p, t in
            let d = p - t
            return (d * d, 2 * d)
        }
    }

    /// `mean(|p - t|)` and `sign(p - t) / count`, sign(0) = 0.
    static func meanAbsoluteError(_ prediction: Tensor, _ target: Tensor) throws -> LossResult {
        try elementwise(prediction, target, .l1) { p, t in
            let d = p - t
            return (abs(d), d > 0 ? 1 : d < 0 ? -1 : 0)
        }
    }

    /// Binary cross-entropy of logits `x` against targets `t`, in the form
    /// that neither overflows nor loses a small loss:
    /// `max(x, 0) - x t + log1p(exp(-|x|))`, derivative `sigmoid(x) - t`.
    static func binaryCrossEntropy(logits: Tensor, _ target: Tensor) throws -> LossResult {
        try elementwise(logits, target, .binaryCrossEntropyWithLogits) { x, t in
            let loss = max(x, 0) - x * t + log1p(exp(-abs(x)))
            // sigmoid through exp(-|x|), which cannot overflow.
            let e = exp(-abs(x))
            let sigmoid = x >= 0 ? 1 / (1 + e) : e / (1 + e)
            return (loss, sigmoid - t)
        }
    }

    /// A loss that is the mean of `term(p, t)` (its value and derivative in
    /// p) over the elements, targets in the prediction's element order.
    private static func elementwise(_ prediction: Tensor, _ target: Tensor, _ loss: Loss,
                                    _ term: (Double, Double) -> (value: Double, derivative: Double)) throws -> LossResult {
        try requireSameElements(prediction, target, loss)
        guard prediction.count > 0 else {
            throw LayerKitError.shapeMismatch("\(loss.rawValue) loss: the prediction \(Tensor.describe(prediction.shape)) is empty")
        }
        let (p, t) = (prediction.elements, target.elements)
        let count = Double(prediction.count)
        var gradient = [Double](repeating: 0, count: prediction.count)
        var total = 0.0
        for i in 0..<prediction.count {
            let (value, derivative) = term(Double(p[i]), Double(t[i]))
            total += value
            gradient[i] = derivative / count
        }
        return LossResult(value: total / count, gradient: try gradientTensor(prediction.shape, gradient))
    }
}
