/// Einstein summation and determinants, computed by their typed kernels
/// (`TypedKernels+Einsum`, `TypedKernels+Determinant`) wherever they run:
/// folded on known operands, a `TypedStep` on integer or float64 operands
/// of the run, and on float operands of the run, a `TypedKernelLayer`
/// (CPU, planned once).
extension ONNXOperators {
    static let linearAlgebra: [ONNXOperator] = [
        indexed("Einsum", through: 28, inputs: 1...Int.max, TypedKernels.einsum),  // 28: types
        indexed("Det", through: 22, inputs: 1...1, TypedKernels.determinant),  // 22: types
    ]
}
