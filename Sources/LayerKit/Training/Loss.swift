import Foundation

/// A training loss: compares a prediction with its targets and gives the
/// loss and its gradient with respect to the prediction. Every loss is
/// reduced by the mean, as PyTorch's default `reduction='mean'`: over the
/// batch for the cross-entropies, over every element for the others. The
/// loss is summed in Double; the gradient is rounded to Float32 once.
///
/// The raw values are the names the `layerkit train --loss` flag takes.
public enum Loss: String, Sendable, CaseIterable {
    /// Cross-entropy from logits [N, K] and class indices [N] (or [N, 1]):
    /// softmax and cross-entropy fused, `mean_i(logsumexp(x_i) - x_i[t_i])`
    /// (torch.nn.CrossEntropyLoss). The gradient is `(softmax(x) - onehot(t)) / N`.
    case crossEntropy = "ce"
    /// Cross-entropy after a softmax: probabilities [N, K] in (each in
    /// [0, 1]), class indices [N] (or [N, 1]) as targets,
    /// `mean_i(-log(max(p_i[t_i], probabilityFloor)))`. The clamp keeps a
    /// probability of 0 finite: below the floor the loss is
    /// `-log(probabilityFloor)` and the gradient `-1 / (N * probabilityFloor)`
    /// (the direction that raises the probability, not a zero).
    case crossEntropyFromProbabilities = "ce-probabilities"
    /// Mean squared error, `mean((p - t)^2)`, gradient `2 (p - t) / count`
    /// (torch.nn.MSELoss).
    case meanSquaredError = "mse"
    /// Mean absolute error, `mean(|p - t|)`, gradient `sign(p - t) / count`
    /// with sign(0) = 0 (torch.nn.L1Loss).
    case l1
    /// Binary cross-entropy with logits, element by element, in the stable
    /// form `max(x, 0) - x t + log1p(exp(-|x|))`, gradient
    /// `(sigmoid(x) - t) / count` (torch.nn.BCEWithLogitsLoss). Targets may
    /// be soft (any value; 0 and 1 for labels).
    case binaryCrossEntropyWithLogits = "bce"

    /// The floor `crossEntropyFromProbabilities` clamps a target's
    /// probability to before its log (Keras's epsilon for the same loss).
    public static let probabilityFloor = 1e-7

    /// The loss of `prediction` against `target` and dLoss/dPrediction.
    ///
    /// For the cross-entropies `prediction` is [N, K] and `target` holds N
    /// class indices (whole numbers in 0..<K, shape [N] or [N, 1]); for the
    /// others `target` has the prediction's shape, or the same extents once
    /// extents of 1 are dropped ([N] against [N, 1]). Throws
    /// `LayerKitError.shapeMismatch` naming both shapes when they do not
    /// fit, and `LayerKitError.invalidParameter` for a class index out of
    /// range or not whole, or a NaN or infinite value (named by position).
    public func evaluate(prediction: Tensor, target: Tensor) throws -> LossResult {
        try requireFinite(prediction, "prediction")
        try requireFinite(target, "target")
        let result: LossResult
        switch self {
        case .crossEntropy: result = try Loss.crossEntropy(logits: prediction, classes: target)
        case .crossEntropyFromProbabilities: result = try Loss.crossEntropy(probabilities: prediction, classes: target)
        case .meanSquaredError: result = try Loss.meanSquaredError(prediction, target)
        case .l1: result = try Loss.meanAbsoluteError(prediction, target)
        case .binaryCrossEntropyWithLogits: result = try Loss.binaryCrossEntropy(logits: prediction, target)
        }
        guard result.value.isFinite else {
            throw LayerKitError.invalidParameter("\(rawValue) loss: the loss is \(result.value)")
        }
        return result
    }

    /// Throws naming the first NaN or infinite value of `tensor`.
    private func requireFinite(_ tensor: Tensor, _ what: String) throws {
        if let i = tensor.elements.firstIndex(where: { !$0.isFinite }) {
            throw LayerKitError.invalidParameter(
                "\(rawValue) loss: the \(what) \(Tensor.describe(tensor.shape)) holds \(tensor[i]) at element \(i)")
        }
    }

    /// Checks that `target` fits `prediction` element for element: the same
    /// shape, or the same once extents of 1 are dropped.
    static func requireSameElements(_ prediction: Tensor, _ target: Tensor, _ loss: Loss) throws {
        let squeezed = { (shape: [Int]) in shape.filter { $0 != 1 } }
        guard prediction.shape == target.shape || squeezed(prediction.shape) == squeezed(target.shape) else {
            throw LayerKitError.shapeMismatch(
                "\(loss.rawValue) loss: target \(Tensor.describe(target.shape)) does not match prediction "
                + "\(Tensor.describe(prediction.shape)) (\(target.count) target values for \(prediction.count) predictions)")
        }
    }

    /// A Float32 tensor of `shape` holding `gradient` rounded once.
    static func gradientTensor(_ shape: [Int], _ gradient: [Double]) throws -> Tensor {
        try Tensor(shape: shape, values: gradient.map { Float($0) })
    }
}

/// A loss value and its gradient.
public struct LossResult: Sendable {
    /// The loss, reduced by the mean, in Double.
    public let value: Double
    /// dLoss/dPrediction, Float32, of the prediction's shape.
    public let gradient: Tensor
}
