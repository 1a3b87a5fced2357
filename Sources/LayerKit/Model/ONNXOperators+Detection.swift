/// The object-detection ops, computed by their typed kernels: NonMaxSuppression
/// (`TypedKernels+Suppression`), whose output shape its values decide, folds
/// on values known at prepare (planned per value).
extension ONNXOperators {
    static let detection: [ONNXOperator] = [
        ONNXOperator("NonMaxSuppression", through: 11, fold: TypedKernels.nonMaxSuppression),  // 11: boxes' corners in either order
    ]
}
