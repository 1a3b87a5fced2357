/// The signal ops, computed by their typed kernels (`TypedKernels+Signal`,
/// `TypedKernels+Windows`) in Double: DFT and STFT folded on known inputs,
/// a `TypedStep` on float64 values of the run and, on float values of the
/// run, a `TypedKernelLayer` (CPU, planned once: the lengths and axis that
/// decide the output shape are known at prepare, `ONNXShapeInputs`); the
/// windows and MelWeightMatrix, whose scalars decide their shapes, fold.
extension ONNXOperators {
    static let signal: [ONNXOperator] = [
        ONNXOperator("DFT", through: 20, arity: { ($0 >= 20 ? 1...3 : 1...2, 1...1) }, fold: TypedKernels.dft,
                     TypedKernelLayer.converter(TypedKernels.dft)),  // 20: axis an input, default -2
        indexed("STFT", through: 17, inputs: 2...4, TypedKernels.stft),
        ONNXOperator("HannWindow", through: 17) { try TypedKernels.window($0, $1, .hann) },
        ONNXOperator("HammingWindow", through: 17) { try TypedKernels.window($0, $1, .hamming) },
        ONNXOperator("BlackmanWindow", through: 17) { try TypedKernels.window($0, $1, .blackman) },
        ONNXOperator("MelWeightMatrix", through: 17, fold: TypedKernels.melWeightMatrix),
    ]
}
