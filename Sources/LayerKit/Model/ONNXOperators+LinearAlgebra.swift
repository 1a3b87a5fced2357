/// Einstein summation, computed by its typed kernel
/// (`TypedKernels+Einsum`) wherever it runs: folded on known operands, a
/// `TypedStep` on integer or float64 operands of the run, and on float
/// operands of the run, a `TypedKernelLayer` (CPU, planned once).
extension ONNXOperators {
    static let linearAlgebra: [ONNXOperator] = [
        indexed("Einsum", through: 28, inputs: 1...Int.max, TypedKernels.einsum),  // 28: types
    ]
}
