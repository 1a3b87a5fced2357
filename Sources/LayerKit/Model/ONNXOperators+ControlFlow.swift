/// Control flow, If, Loop and Scan: ops whose bodies are graphs
/// (`ONNXSubgraph`), run on the CPU by their kernels
/// (`TypedKernels+ControlFlow`): folded when every input they read is
/// known, a `TypedStep` on typed values of the run (a computed condition),
/// a `TypedKernelLayer` on float values of the run. Each version through 24
/// changed only the types a body's values may have (sequences, optionals,
/// float8, 4-bit), which the kernels move as they are.
extension ONNXOperators {
    static let controlFlow: [ONNXOperator] = [
        ONNXOperator("If", through: 24, inputs: 1...1, outputs: 1...Int.max, fold: TypedKernels.ifThenElse,
                     TypedKernelLayer.converter(TypedKernels.ifThenElse)),
        // 11: M and cond optional, no scan output needed
        ONNXOperator("Loop", through: 24, arity: { opset in ((opset < 11 ? 3 : 2)...Int.max, 1...Int.max) },
                     fold: TypedKernels.loop, TypedKernelLayer.converter(TypedKernels.loop)),
        // 9: no batch axis or sequence_lens, scan axes and directions per input and output
        ONNXOperator("Scan", through: 24, inputs: 1...Int.max, outputs: 1...Int.max, fold: TypedKernels.scan,
                     TypedKernelLayer.converter(TypedKernels.scan)),
    ]
}
