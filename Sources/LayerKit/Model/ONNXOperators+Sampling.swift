/// Sampling at computed coordinates, GridSample and AffineGrid, computed
/// by their typed kernels (`TypedKernels+Sampling`) wherever they run:
/// folded on known inputs, a `TypedStep` on float64 values of the run,
/// and on float values of the run, a `TypedKernelLayer` (CPU, planned
/// once). AffineGrid's size decides its output shape, so it is known at
/// prepare (`ONNXShapeInputs`).
extension ONNXOperators {
    static let sampling: [ONNXOperator] = [
        indexed("GridSample", through: 22, inputs: 2...2, TypedKernels.gridSample),  // 20: N-D, modes linear and cubic; 22: types
        indexed("AffineGrid", through: 20, inputs: 2...2, TypedKernels.affineGrid),
    ]
}
