/// Ops that place their input's elements into a new tensor whose shape an
/// input gives: CenterCropPad, MaxUnpool and Col2Im, computed by their
/// typed kernels (`TypedKernels+Regions`) wherever they run: folded on
/// known inputs, a `TypedStep` on typed values of the run (MaxUnpool's
/// indices), and on float values of the run with constant shapes, a
/// `TypedKernelLayer` (CPU, planned once).
extension ONNXOperators {
    static let regions: [ONNXOperator] = [
        indexed("CenterCropPad", through: 18, inputs: 2...2, TypedKernels.centerCropPad),
        indexed("MaxUnpool", through: 22, inputs: 2...3, TypedKernels.maxUnpool),  // 11: output_shape's rule clarified; 22: types
        indexed("Col2Im", through: 18, inputs: 3...3, TypedKernels.col2Im),
    ]
}
