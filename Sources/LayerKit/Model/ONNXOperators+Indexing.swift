import Foundation

/// Ops computed by a typed kernel wherever they run: GatherND, ScatterND,
/// Compress, ReverseSequence, TopK, Trilu, EyeLike and CumProd. On known
/// inputs the kernel folds them at load; on an integer or bool value of the
/// run a `TypedStep` runs it; on float data of the run with constant
/// indices, its `TypedKernelLayer` (CPU, float32), planned once.
extension ONNXOperators {
    static let indexing: [ONNXOperator] = [
        indexed("GatherND", through: 13, inputs: 2...2, TypedKernels.gatherND),  // 12: batch_dims; 13: types
        // 13: types; 16: reduction add, mul; 18: reduction max, min
        indexed("ScatterND", through: 18, inputs: 3...3, TypedKernels.scatterND),
        indexed("Compress", through: 28, inputs: 2...2, TypedKernels.compress),  // 11: negative axis; 28: types
        indexed("ReverseSequence", through: 28, inputs: 2...2, TypedKernels.reverseSequence),  // 28: types
        // 10: K as an input (before, the attribute k); 11: largest, sorted, negative axis, types; 24: types
        ONNXOperator("TopK", through: 24, arity: { ($0 >= 10 ? 2...2 : 1...1, 2...2) }, fold: TypedKernels.topK,
                     TypedKernelLayer.converter(TypedKernels.topK)),
        indexed("Trilu", through: 14, inputs: 1...2, TypedKernels.trilu),
        indexed("EyeLike", through: 22, inputs: 1...1, TypedKernels.eyeLike),  // 22: types
        indexed("CumProd", through: 26, inputs: 2...2, TypedKernels.cumulativeProduct),
    ]

    /// An op of one output whose typed kernel both folds it and, as its
    /// layer, runs it on float data.
    static func indexed(_ name: String, through implemented: Int, inputs: ClosedRange<Int>,
                        _ kernel: @escaping TypedKernels.Kernel) -> ONNXOperator {
        ONNXOperator(name, through: implemented, inputs: inputs, fold: kernel, TypedKernelLayer.converter(kernel))
    }
}
