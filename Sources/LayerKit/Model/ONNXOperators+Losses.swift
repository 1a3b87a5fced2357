/// The classification losses, NegativeLogLikelihoodLoss and
/// SoftmaxCrossEntropyLoss, computed by their typed kernels
/// (`TypedKernels+Losses`) wherever they run: folded on known inputs, a
/// `TypedStep` on class indices (or float64 scores) of the run, and on
/// float scores of the run with constant indices, a `TypedKernelLayer`
/// (CPU).
extension ONNXOperators {
    static let losses: [ONNXOperator] = [
        indexed("NegativeLogLikelihoodLoss", through: 22, inputs: 2...3, TypedKernels.negativeLogLikelihoodLoss),  // 13, 22: types
        // 13: types
        ONNXOperator("SoftmaxCrossEntropyLoss", through: 13, inputs: 2...3, outputs: 1...2,
                     fold: TypedKernels.softmaxCrossEntropyLoss, TypedKernelLayer.converter(TypedKernels.softmaxCrossEntropyLoss)),
    ]
}
