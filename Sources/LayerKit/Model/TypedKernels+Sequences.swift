import LayerKitONNX

/// The sequence and optional ops on container values
/// (`TypedTensor.Container`): each moves whole tensors, never their
/// elements' bits, so every element type is exact. Positions follow the
/// spec: negative ones count from the back, one outside the sequence is an
/// error naming the node.
extension TypedKernels {
    /// Input `i` as a sequence's tensors.
    static func sequence(_ i: Int, _ inputs: [TypedTensor?], _ node: ONNXNodeContext) throws -> (tensors: [TypedTensor], type: ElementType) {
        let value = try input(i, inputs, node)
        guard let tensors = value.sequenceElements else { throw node.error("input \(i) is a \(value.form), not a sequence") }
        return (tensors, value.elementType)
    }

    /// A position in a sequence of `count` tensors: `[-count, count - 1]`,
    /// or to `count` where inserting at the back is allowed.
    static func position(_ tensor: TypedTensor, count: Int, inserting: Bool, _ node: ONNXNodeContext) throws -> Int {
        let given = try scalarInteger(tensor, "position", node)
        let last = inserting ? count : count - 1
        guard given >= -Int64(count), given <= Int64(last) else {
            throw node.error(count == 0 && !inserting ? "position \(given) is out of range: the sequence is empty"
                             : "position \(given) is out of range for a sequence of \(count) tensors "
                               + "(\(-count) to \(last))")
        }
        return Int(given < 0 ? given + Int64(count) : given)
    }

    /// SequenceEmpty: no tensors, of `dtype` (float32 when not given).
    static let sequenceEmpty: Kernel = { node, _ in
        let code = try node.int("dtype", default: ElementType.float32.rawValue)
        guard let type = ElementType(rawValue: code) else { throw node.error("dtype \(code) is not an ONNX element type") }
        return [TypedTensor(container: .sequence([]), elementType: type)]
    }

    /// SequenceConstruct: its inputs, in order; they share one element type.
    static let sequenceConstruct: Kernel = { node, inputs in
        let tensors = try inputs.indices.map { try input($0, inputs, node) }
        guard let first = tensors.first else { throw node.error("needs at least one input") }
        do { return [try TypedTensor(sequence: tensors, elementType: first.elementType)] } catch { throw node.naming(error) }
    }

    /// SequenceInsert: `tensor` inserted at `position` (the back when omitted).
    static let sequenceInsert: Kernel = { node, inputs in
        var (tensors, type) = try sequence(0, inputs, node)
        let tensor = try input(1, inputs, node)
        let at = try optional(2, inputs).map { try position($0, count: tensors.count, inserting: true, node) } ?? tensors.count
        tensors.insert(tensor, at: at)
        do { return [try TypedTensor(sequence: tensors, elementType: type)] } catch { throw node.naming(error) }
    }

    /// SequenceAt: the tensor at `position`.
    static let sequenceAt: Kernel = { node, inputs in
        let (tensors, _) = try sequence(0, inputs, node)
        return [tensors[try position(input(1, inputs, node), count: tensors.count, inserting: false, node)]]
    }

    /// SequenceErase: the sequence without the tensor at `position` (the last when omitted).
    static let sequenceErase: Kernel = { node, inputs in
        var (tensors, type) = try sequence(0, inputs, node)
        let at = try position(optional(1, inputs) ?? TypedTensor(.int64, shape: [], integers: [-1]),
                              count: tensors.count, inserting: false, node)
        tensors.remove(at: at)
        return [TypedTensor(container: .sequence(tensors), elementType: type)]
    }

    /// SequenceLength: how many tensors, an int64 scalar.
    static let sequenceLength: Kernel = { node, inputs in
        [try TypedTensor(.int64, shape: [], integers: [Int64(sequence(0, inputs, node).tensors.count)])]
    }

    /// SplitToSequence: `input` cut along `axis` into the lengths `split`
    /// gives (one length for every piece, the last shorter; or one per
    /// piece), or into pieces of 1 without the axis unless `keepdims`.
    static let splitToSequence: Kernel = { node, inputs in
        let tensor = try input(0, inputs, node)
        let axis = try node.axis(node.int("axis", default: 0), rank: tensor.shape.count)
        let length = tensor.shape[axis]
        let slices = try (0..<length).map { try tensor.slice($0, of: axis) }
        let lengths: [Int]
        if let split = optional(1, inputs) {
            let values = split.integers().map(Int.init)
            if split.shape.isEmpty {
                guard let size = values.first, size > 0 else { throw node.error("split must be positive, got \(values)") }
                lengths = Array(repeating: size, count: length / size) + (length % size == 0 ? [] : [length % size])
            } else {
                guard values.allSatisfy({ $0 >= 0 }), values.reduce(0, +) == length else {
                    throw node.error("split \(values) does not add up to \(length), the extent of axis \(axis)")
                }
                lengths = values
            }
        } else if try node.int("keepdims", default: 1) == 0 {
            return [TypedTensor(container: .sequence(slices), elementType: tensor.elementType)]
        } else {
            lengths = Array(repeating: 1, count: length)
        }
        var start = 0, pieces: [TypedTensor] = []
        for count in lengths {
            var shape = tensor.shape
            shape[axis] = count
            pieces.append(count == 0 ? try TypedTensor(zerosOf: tensor.elementType, shape: shape)
                          : try TypedTensor.stacking(Array(slices[start..<(start + count)]), along: axis))
            start += count
        }
        return [TypedTensor(container: .sequence(pieces), elementType: tensor.elementType)]
    }

    /// ConcatFromSequence: the tensors joined along `axis`, or stacked
    /// along a new one with `new_axis`.
    static let concatFromSequence: Kernel = { node, inputs in
        let (tensors, _) = try sequence(0, inputs, node)
        guard let first = tensors.first else { throw node.error("its sequence is empty: there is nothing to concatenate") }
        guard tensors.allSatisfy({ $0.shape.count == first.shape.count }) else {
            throw node.error("its tensors have different ranks: " + tensors.map { Tensor.describe($0.shape) }.joined(separator: ", "))
        }
        let stacks = try node.int("new_axis", default: 0) == 1
        guard let given = try node.node.int("axis") else { throw node.error("needs the attribute axis") }
        let axis = try node.axis(given, rank: first.shape.count + (stacks ? 1 : 0))
        do {
            if stacks { return [try TypedTensor.stacking(tensors, along: axis)] }
            // Concatenation is stacking every tensor's slices of the axis in order.
            return [try TypedTensor.stacking(tensors.flatMap { tensor in
                try (0..<tensor.shape[axis]).map { try tensor.slice($0, of: axis) }
            }, along: axis)]
        } catch {
            throw node.naming(error)
        }
    }

    /// Optional: its input as an optional, or an empty one.
    static let optionalValue: Kernel = { node, inputs in
        guard let value = optional(0, inputs) else {
            // Empty: of the `type` attribute's element type.
            let type = try node.node.type("type")?.elementType ?? .float32
            return [TypedTensor(container: .optional(nil), elementType: type)]
        }
        return [TypedTensor(container: .optional(value), elementType: value.elementType)]
    }

    /// OptionalHasElement: whether the optional holds a value (a tensor or
    /// sequence given directly holds one; an omitted input, opset 18, none).
    static let optionalHasElement: Kernel = { node, inputs in
        var has = false
        if let value = optional(0, inputs) {
            if case .optional(let held) = value.container { has = held != nil } else { has = true }
        }
        return [try TypedTensor(.bool, shape: [], integers: [has ? 1 : 0])]
    }

    /// OptionalGetElement: the optional's value (a tensor or sequence given
    /// directly is its own); an empty optional is an error.
    static let optionalGetElement: Kernel = { node, inputs in
        let value = try input(0, inputs, node)
        guard case .optional(let held) = value.container else { return [value] }
        guard let held else { throw node.error("its optional input '\(node.node.inputs[0])' is empty") }
        return [held]
    }

    /// SequenceMap: `body` run once per position of the input sequences
    /// (which have one length), on their tensors there and the other
    /// inputs whole; each output is the sequence of the body's values.
    static let sequenceMap: Kernel = { node, inputs in
        guard let graph = try node.node.graph("body") else { throw node.error("has no body") }
        let formal = ONNXSubgraph.formalInputCount(of: node)
        let given = try (0..<formal).map { try input($0, inputs, node) }
        let lengths = Set(given.compactMap { $0.sequenceElements?.count })
        guard given[0].sequenceElements != nil, lengths.count == 1, let length = lengths.first else {
            throw node.error("its sequence inputs have different lengths: \(lengths.sorted())")
        }
        guard length <= ONNXSubgraph.maxIterations else {
            throw node.error("maps \(length) tensors, past \(ONNXSubgraph.maxIterations), LayerKit's limit for a loop")
        }
        let body = try ONNXSubgraph(graph, of: node, types: given.map(\.elementType), scope: ONNXSubgraph.scope(of: node, inputs))
        var outputs: [[TypedTensor]] = Array(repeating: [], count: graph.outputs.count)
        for k in 0..<length {
            let computed = try body.run(given.map { $0.sequenceElements?[k] ?? $0 })
            for (j, value) in computed.enumerated() { outputs[j].append(value) }
        }
        return try outputs.enumerated().map { j, tensors in
            let declared = graph.outputs[j].elementType.flatMap { ElementType(rawValue: $0.rawValue) }
            guard let type = tensors.first?.elementType ?? declared else {
                throw node.error("output \(j) is an empty sequence whose element type the body does not declare")
            }
            do { return try TypedTensor(sequence: tensors, elementType: type) } catch { throw node.naming(error) }
        }
    }
}
