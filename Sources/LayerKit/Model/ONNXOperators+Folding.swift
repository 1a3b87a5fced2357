import Foundation

extension ONNXOperators {
    /// Ops that only exist at load: `ONNXFolding` computes them from what is
    /// known then (a shape, constants). The first five are declared with
    /// their arity (validation) and a conversion that asks for their computed
    /// inputs at prepare (`notFolded`); the rest only fold (their inputs are
    /// asked for at prepare too, or computed by a `TypedStep` at run time).
    static let folding: [ONNXOperator] = [
        ONNXOperator("Constant", through: 25, inputs: 0...0, notFolded),  // 11: sparse_value (refused); 12: value_* attributes; others: types
        ONNXOperator("Shape", through: 25, inputs: 1...1, types: .shape, notFolded),  // 15: start, end; others: types
        ONNXOperator("Size", through: 25, inputs: 1...1, types: .shape, notFolded),  // 13 to 25: types
        ONNXOperator("ConstantOfShape", through: 25, inputs: 1...1, fold: TypedKernels.constantOfShape, notFolded),  // 20 to 25: types
        // 27: stash_type (float16 and bfloat16 computed in float: LayerKit computes in Double, rounded to Float)
        ONNXOperator("Range", through: 27, inputs: 3...3, fold: TypedKernels.range, notFolded),
        ONNXOperator("NonZero", through: 13, fold: TypedKernels.nonZero),  // 13: types
        ONNXOperator("Unique", through: 28, fold: TypedKernels.unique),  // 28: types
        ONNXOperator("BitCast", through: 26, fold: TypedKernels.bitCast),
        ONNXOperator("OneHot", through: 28, fold: TypedKernels.oneHot),  // 11: negative indices and axis; 28: types
        ONNXOperator("ArgMax", through: 13) { try TypedKernels.argExtreme($0, $1, largest: true) },  // 11: negative axis; 12: select_last_index; 13: types
        ONNXOperator("ArgMin", through: 13) { try TypedKernels.argExtreme($0, $1, largest: false) },  // as ArgMax
        ONNXOperator("CumSum", through: 14, fold: TypedKernels.cumulativeSum),  // 14: types
        ONNXOperator("BitwiseAnd", through: 18) { try TypedKernels.bitwise($0, $1) { $0 & $1 } },
        ONNXOperator("BitwiseOr", through: 18) { try TypedKernels.bitwise($0, $1) { $0 | $1 } },
        ONNXOperator("BitwiseXor", through: 18) { try TypedKernels.bitwise($0, $1) { $0 ^ $1 } },
        ONNXOperator("BitwiseNot", through: 18, fold: TypedKernels.bitwiseNot),
        ONNXOperator("BitShift", through: 28, fold: TypedKernels.bitShift),  // 28: signed types, shifted right arithmetically
    ]

    /// The error of such an op reached at run time; its computed inputs are
    /// asked for at prepare first (`ValueRequests`), so that a model whose
    /// Range limit comes from an input runs, planned per value.
    static func notFolded(_ node: ONNXNodeContext) throws -> ConvertedNode {
        for i in node.node.inputs.indices where node.has(i) && node.initializers[i] == nil {
            node.requests?.record(node.node.inputs[i])
        }
        throw node.error("its inputs must be known at load (constants, or shapes computed from them); "
                         + "\(node.node.opType) of values computed at run time is not supported")
    }
}
