import Foundation

extension ONNXOperators {
    /// The string ops: only their typed kernels compute them, on string
    /// values (`TypedKernels+Strings`).
    static let strings: [ONNXOperator] = [
        ONNXOperator("StringConcat", through: 20, fold: TypedKernels.stringConcat),
        ONNXOperator("StringSplit", through: 20, fold: TypedKernels.stringSplit),
        ONNXOperator("StringNormalizer", through: 10, fold: TypedKernels.stringNormalizer),
    ]
}
