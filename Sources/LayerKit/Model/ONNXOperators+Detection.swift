/// The object-detection ops, computed by their typed kernels: NonMaxSuppression
/// (`TypedKernels+Suppression`), whose output shape its values decide, folds
/// on values known at prepare (planned per value); RoiAlign
/// (`TypedKernels+RoiAlign`) and DeformConv (`TypedKernels+DeformConv`)
/// also run on float values of the run, a `TypedKernelLayer` (CPU,
/// planned once).
extension ONNXOperators {
    static let detection: [ONNXOperator] = [
        ONNXOperator("NonMaxSuppression", through: 11, fold: TypedKernels.nonMaxSuppression),  // 11: boxes' corners in either order
        indexed("RoiAlign", through: 22, inputs: 3...3, TypedKernels.roiAlign),  // 16: coordinate_transformation_mode (half_pixel by default); 22: types
        indexed("DeformConv", through: 22, inputs: 3...5, TypedKernels.deformConv),  // 22: types
    ]
}
