/// Control flow, If, Loop and Scan: ops whose bodies are graphs
/// (`ONNXSubgraph`), run on the CPU by their kernels
/// (`TypedKernels+ControlFlow`): folded when every input they read is
/// known, a `TypedStep` on typed values of the run (a computed condition),
/// a `TypedKernelLayer` on float values of the run. Each version after the
/// first change named below (13 to 25) changed only the types a body's values may
/// have (sequences, optionals, float8, 4- and 2-bit), which the kernels move
/// as they are; the body's own nodes check theirs.
extension ONNXOperators {
    static let controlFlow: [ONNXOperator] = [
        ONNXOperator("If", through: 25, inputs: 1...1, outputs: 1...Int.max, fold: TypedKernels.ifThenElse,
                     bodyRunner(TypedKernels.ifThenElse)),
        // 11: M and cond optional, no scan output needed
        ONNXOperator("Loop", through: 25, arity: { opset in ((opset < 11 ? 3 : 2)...Int.max, 1...Int.max) },
                     fold: TypedKernels.loop, bodyRunner(TypedKernels.loop)),
        // 9: no batch axis or sequence_lens, scan axes and directions per input and output
        ONNXOperator("Scan", through: 25, inputs: 1...Int.max, outputs: 1...Int.max, fold: TypedKernels.scan,
                     bodyRunner(TypedKernels.scan)),
    ]

    /// The conversion of a control-flow node on float values of the run: a
    /// `TypedKernelLayer`, planned once, after the inputs whose values
    /// decide its output shapes (If's condition, Loop's trip count and
    /// condition: `ONNXShapeInputs`) are known at prepare; one computed at
    /// run time is asked for (`ValueRequests`), and the plan made per value.
    private static func bodyRunner(_ kernel: @escaping TypedKernels.Kernel) -> Converter {
        { node in
            for i in node.node.inputs.indices where node.has(i) && node.initializers[i] == nil
                && ONNXShapeInputs.decidesShape(node.node.opType, input: i) {
                node.requests?.record(node.node.inputs[i])
                throw node.error("input \(i) ('\(node.node.inputs[i])') decides its output shapes by its values, computed "
                                 + "at run time: LayerKit needs them at prepare")
            }
            let converted = try TypedKernelLayer.converter(kernel)(node)
            // A body that makes a sequence or optional (a SequenceMap's expansion reading a float
            // input) runs at prepare: no float layer holds a container. Its run-time inputs are asked for.
            if let layer = converted.layer as? TypedKernelLayer, try layer.makesContainers(on: node) {
                for i in converted.inputs { node.requests?.record(node.node.inputs[i]) }
                throw node.error("makes a sequence or optional from a value computed at run time: LayerKit needs that value at prepare")
            }
            return converted
        }
    }
}
