import LayerKitONNX

extension ONNXImporter {
    /// The element type of a runtime node's output `k`, from its op and its
    /// inputs' types (`context.inputTypes`): what the ops LayerKit runs at
    /// run time make; a control-flow node's, followed through its body.
    /// Nil when unknown, never guessed: CastLike and the quantized ops take
    /// this type as their target, so a wrong one is a silent wrong result
    /// (an If's float output taken for a bool, its condition's type, made a
    /// CastLike to it turn every value into a one).
    static func outputType(of context: ONNXNodeContext, output k: Int) -> ElementType? {
        let types = context.inputTypes
        func input(_ i: Int) -> ElementType? { i < types.count ? types[i] : nil }
        switch context.node.opType {
        case "Constant": return (try? ONNXFolding.constant(context)).flatMap { declared($0.dataType) }
        case "Cast": return ((try? context.node.int("to")) ?? nil).flatMap { ElementType(rawValue: $0) }
        case "CastLike": return input(1)
        case "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Not", "IsNaN", "IsInf":
            return .bool
        case "Shape", "Size", "ArgMax", "ArgMin", "NonZero": return .int64
        // The quantized ops' integers, which their layers hold as float32.
        case "QuantizeLinear": return try? TypedKernels.quantizedType(context, zeroPoint: input(2))
        case "DequantizeLinear":
            let code = (try? context.node.int("output_dtype")) ?? nil
            return code.flatMap { ElementType(rawValue: $0) } ?? input(1)
        case "DynamicQuantizeLinear": return k == 1 ? .float32 : .uint8
        case "MatMulInteger", "ConvInteger": return .int32
        case "QLinearMatMul", "QLinearConv": return input(7)
        case "If":
            return ["then_branch", "else_branch"].lazy.compactMap { name in
                bodyOutputTypes(context, name, formalInputs: []).flatMap { k < $0.count ? $0[k] : nil }
            }.first
        case "Loop":
            // The body's inputs: iteration, condition, the carried values (the
            // node's inputs 2...); its outputs: condition, carried, scanned.
            let formal = ONNXSubgraph.formalInputCount(of: context)
            let carried = formal > 2 ? (2..<formal).map(input) : []
            let outputs = bodyOutputTypes(context, "body", formalInputs: [.int64, .bool] + carried)
            return outputs.flatMap { k + 1 < $0.count ? $0[k + 1] : nil } ?? (k < carried.count ? carried[k] : nil)
        case "Scan":
            // Opset 8 takes sequence_lens first; the body's inputs are the rest.
            let first = context.opset < 9 ? 1 : 0
            let formal = ONNXSubgraph.formalInputCount(of: context)
            let outputs = bodyOutputTypes(context, "body", formalInputs: first < formal ? (first..<formal).map(input) : [])
            return outputs.flatMap { k < $0.count ? $0[k] : nil }
        default:
            // Only where the op's schema ties the output to an input's type.
            return ONNXValidation.schemaOutputType(of: context.node, output: k, opset: context.opset, inputTypes: types)
        }
    }

    /// The element types of body `name`'s outputs: declared where the body
    /// declares them, else followed node by node (`outputType`) from its
    /// formal inputs' types (`formalInputs`, where its own are missing),
    /// its initializers and the outer values it reads (the node's implicit
    /// inputs, `context.inputTypes`). Nil without such a body.
    private static func bodyOutputTypes(_ context: ONNXNodeContext, _ name: String,
                                        formalInputs: [ElementType?]) -> [ElementType?]? {
        guard let body = (try? context.node.graph(name)) ?? nil else { return nil }
        var types: [String: ElementType] = [:]
        for (input, type) in zip(context.node.inputs, context.inputTypes) where !input.isEmpty { types[input] = type }
        for (info, type) in zip(body.inputs, formalInputs) { types[info.name] = type }
        for value in body.inputs + body.valueInfo + body.outputs {
            if let type = declared(value.elementType) { types[value.name] = type }
        }
        for (initializer, tensor) in body.initializers { types[initializer] = declared(tensor.dataType) }
        for node in body.nodes {
            var inner = ONNXNodeContext(node: node, opset: context.opset, inputShapes: node.inputs.map { _ in nil },
                                        initializers: node.inputs.map { _ in nil })
            inner.inputTypes = node.inputs.map { types[$0] }
            for (k, output) in node.outputs.enumerated() where !output.isEmpty && types[output] == nil {
                types[output] = outputType(of: inner, output: k)
            }
        }
        return body.outputs.map { types[$0.name] }
    }

    private static func declared(_ type: ONNXDataType?) -> ElementType? {
        type.flatMap { ElementType(rawValue: $0.rawValue) }
    }
}
