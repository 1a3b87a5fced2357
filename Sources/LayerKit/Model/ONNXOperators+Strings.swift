import Foundation

extension ONNXOperators {
    /// The string and text ops: only their typed kernels compute them, on
    /// string values (`TypedKernels+Strings`, `+Regex`) and, for
    /// TfIdfVectorizer, integer tokens too (`TypedKernels+TfIdf`).
    static let strings: [ONNXOperator] = [
        ONNXOperator("StringConcat", through: 20, fold: TypedKernels.stringConcat),
        ONNXOperator("StringSplit", through: 20, fold: TypedKernels.stringSplit),
        ONNXOperator("StringNormalizer", through: 10, fold: TypedKernels.stringNormalizer),
        ONNXOperator("RegexFullMatch", through: 20, fold: TypedKernels.regexFullMatch),
        ONNXOperator("TfIdfVectorizer", through: 9, fold: TypedKernels.tfIdfVectorizer),
    ]
}
