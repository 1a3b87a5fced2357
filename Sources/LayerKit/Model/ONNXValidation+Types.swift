import LayerKitONNX

extension ONNXValidation {
    /// Checks every standard node's inputs of known element type against
    /// its schema at the version `opset` resolves it to (`ONNXOpSchema`), as
    /// onnxruntime checks them against ONNX's type constraints at load: an
    /// input of a type its parameter does not allow, or inputs sharing a type
    /// variable (T) with different types, is refused as onnxruntime refuses
    /// it; a type ONNX allows but LayerKit does not compute for the op
    /// (`OpTypes`) is refused saying so and how LayerKit computes the op
    /// (both `invalidModel`, which the model's name prefixes). A type is known for initializers, typed graph inputs,
    /// value_info and graph outputs, and node by node where the schema fixes
    /// an output's type (its type variable's one allowed type, or an input's
    /// of the same variable, or Cast's `to`, or a Constant's value); an input
    /// of unknown type is not checked. `model`'s nodes are in a topological
    /// order.
    static func checkTypes(_ model: ONNXModel, opset: Int) throws {
        var types: [String: ElementType] = [:]
        for value in model.graph.valueInfo + model.graph.outputs {
            types[value.name] = elementType(value.elementType)
        }
        for (name, tensor) in model.graph.initializers { types[name] = elementType(tensor.dataType) }
        for input in model.graph.inputs where input.elementType != nil { types[input.name] = elementType(input.elementType) }
        for node in model.graph.nodes {
            guard node.isStandard, let schema = ONNXOpSchema.resolved(node.opType, opset: opset) else { continue }
            let inputTypes = node.inputs.map { $0.isEmpty ? nil : types[$0] }
            let bound = try check(node, inputTypes, schema, opset)
            for (i, output) in node.outputs.enumerated() where !output.isEmpty {
                if let type = outputType(node, i, schema, bound) { types[output] = type }
            }
        }
    }

    /// Checks `node`'s inputs of known type (`inputTypes`) against `schema`,
    /// then against what LayerKit computes; returns the type each type
    /// variable is bound to.
    private static func check(_ node: ONNXNode, _ inputTypes: [ElementType?], _ schema: ONNXOpSchema,
                              _ opset: Int) throws -> [String: ElementType] {
        var bound: [String: (type: ElementType, input: Int)] = [:]
        let at = "\(node.opType) at opset \(opset) (its version \(schema.version))"
        func named(_ i: Int) -> String { "input \(i) ('\(node.inputs[i])')" }
        for (i, type) in inputTypes.enumerated() {
            guard let type, let parameter = schema.input(at: i),
                  let allowed = schema.constraints[parameter.type], !allowed.isEmpty else { continue }
            guard allowed.contains(type) else {
                let variable = parameter.type.hasPrefix("tensor(") ? "" : " (type \(parameter.type))"
                throw LayerKitError.invalidModel(
                    "\(node.label): \(named(i)) is \(type), which \(at) does not allow for \(parameter.name)\(variable): "
                    + "it takes \(allowed.types.map(\.description).joined(separator: ", ")) (onnxruntime refuses it too)")
            }
            // Each value of a variadic parameter of mixed types has a type of its own.
            guard parameter.option != .heterogeneous else { continue }
            if let first = bound[parameter.type], first.type != type {
                throw LayerKitError.invalidModel(
                    "\(node.label): \(named(first.input)) is \(first.type) and \(named(i)) is \(type), but \(at) "
                    + "takes one type for both (type \(parameter.type)) (onnxruntime refuses it too)")
            }
            bound[parameter.type] = bound[parameter.type] ?? (type, i)
        }
        if let op = ONNXOperators.table[node.opType] {
            for (i, type) in inputTypes.enumerated() {
                guard let type, !op.types.computes(type), let parameter = schema.input(at: i),
                      schema.constraints[parameter.type]?.types.contains(where: \.isFloatingPoint) == true else { continue }
                // An input whose type allows floats is data; integer-only inputs (shapes, indices, axes) are read by the conversion.
                throw LayerKitError.invalidModel(
                    "\(node.label): \(named(i)) is \(type), which ONNX allows but LayerKit does not compute for "
                    + "\(node.opType): it computes \(op.types.summary)")
            }
        }
        return bound.mapValues(\.type)
    }

    /// The element type of standard `node`'s output `index` as its schema
    /// at `opset` fixes it from its inputs' types (`inputTypes`, nil where
    /// unknown): its type variable's one allowed type, or the type of an
    /// input of the same variable; nil where the schema does not fix it (a
    /// type from an attribute, a body's, an unknown input's).
    static func schemaOutputType(of node: ONNXNode, output index: Int, opset: Int,
                                 inputTypes: [ElementType?]) -> ElementType? {
        guard node.isStandard, let schema = ONNXOpSchema.resolved(node.opType, opset: opset) else { return nil }
        var bound: [String: ElementType] = [:]
        for (i, type) in inputTypes.enumerated() {
            guard let type, let parameter = schema.input(at: i), parameter.option != .heterogeneous else { continue }
            bound[parameter.type] = bound[parameter.type] ?? type
        }
        return outputType(node, index, schema, bound)
    }

    /// The element type of `node`'s output `index` where the schema fixes it
    /// from what is known, else nil.
    private static func outputType(_ node: ONNXNode, _ index: Int, _ schema: ONNXOpSchema,
                                   _ bound: [String: ElementType]) -> ElementType? {
        switch node.opType {
        case "Cast": if case .int(let code)? = node.attributes["to"] { return ElementType(rawValue: code) }
        case "Constant": if case .tensor(let tensor)? = node.attributes["value"] { return elementType(tensor.dataType) }
        default: break
        }
        guard let parameter = schema.output(at: index), parameter.option != .heterogeneous,
              let allowed = schema.constraints[parameter.type] else { return nil }
        let only = allowed.types
        return only.count == 1 ? only[0] : bound[parameter.type]
    }

    private static func elementType(_ type: ONNXDataType?) -> ElementType? {
        type.flatMap { ElementType(rawValue: $0.rawValue) }
    }
}
