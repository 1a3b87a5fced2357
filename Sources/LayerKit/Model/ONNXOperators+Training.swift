extension ONNXOperators {
    /// The domain of the optimizers in `trainingTable`.
    static let trainingDomain = "ai.onnx.preview.training"

    /// ai.onnx.preview.training's optimizers, one step each, computed by
    /// their typed kernels (`TypedKernels+Optimizers`) on the CPU.
    static let trainingTable: [String: ONNXOperator] = byName([
        ONNXOperator("Adagrad", through: 1, fold: TypedKernels.adagrad),
        ONNXOperator("Momentum", through: 1, fold: TypedKernels.momentum),
        ONNXOperator("Adam", through: 1, fold: TypedKernels.adam),
    ])
}
