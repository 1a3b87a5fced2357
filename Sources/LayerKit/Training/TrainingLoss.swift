/// The loss a training run minimizes, as `layerkit train --loss` names it.
/// Every loss is the mean over the mini-batch, as PyTorch's default
/// reduction. Cross-entropy reads logits `[N, K]` and class indices `[N]`;
/// when the model ends in a Softmax over its last axis, it reads the
/// Softmax's input instead and the two are differentiated as one.
public enum TrainingLoss: String, Sendable, CaseIterable {
    /// Softmax cross-entropy from logits and class indices (`ce`).
    case crossEntropy = "ce"
    /// Mean squared error against targets of the prediction's shape (`mse`).
    case meanSquaredError = "mse"
    /// Mean absolute error (`l1`).
    case l1
    /// Binary cross-entropy with logits against 0/1 targets (`bce`).
    case binaryCrossEntropyWithLogits = "bce"
}
