import Foundation

extension ONNXOperators {
    /// Ops that only exist at load: `ONNXFolding` computes them from what is
    /// known then (a shape, constants). They are in the table for their
    /// arity (validation) and for the error when an input is computed at
    /// run time, which LayerKit's float tensors cannot feed them.
    static let folding: [String: ONNXOperator] = [
        "Constant": ONNXOperator(inputs: 0...0, notFolded),
        "Shape": ONNXOperator(inputs: 1...1, notFolded),
        "Size": ONNXOperator(inputs: 1...1, notFolded),
        "ConstantOfShape": ONNXOperator(inputs: 1...1, notFolded),
        "Range": ONNXOperator(inputs: 3...3, notFolded),
    ]

    static func notFolded(_ node: ONNXNodeContext) throws -> ConvertedNode {
        throw node.error("its inputs must be known at load (constants, or shapes computed from them); "
                         + "\(node.node.opType) of values computed at run time is not supported")
    }
}
