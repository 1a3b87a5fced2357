import LayerKitONNX

/// An op's typed kernel (`TypedKernels`) as a float layer, for a node whose
/// data is a float value computed at run time and whose other inputs
/// (indices, K, an axis) are constants: a TopK of logits, a GatherND of
/// activations by constant indices. It runs on the CPU in float32 each run,
/// so the plan is made once rather than per value of the data. The
/// constants stay typed (int64 indices past 2^24 exact); the outputs are
/// float32, an integer output (TopK's indices) converted back to its
/// declared type by the model.
///
/// Where an index input is itself computed at run time, the node reads a
/// typed value and runs as a `TypedStep` instead, on the same kernel.
final class TypedKernelLayer: Layer, @unchecked Sendable {
    /// The node, its constant inputs known.
    let node: ONNXNodeContext
    let kernel: TypedKernels.Kernel
    /// The node inputs the layer takes at run time, in its input order.
    let runtimeInputs: [Int]
    /// Per node input: the constant, nil for a run-time or omitted input.
    let constants: [TypedTensor?]

    init(node: ONNXNodeContext, kernel: @escaping TypedKernels.Kernel, runtimeInputs: [Int], constants: [TypedTensor?]) {
        (self.node, self.kernel, self.runtimeInputs, self.constants) = (node, kernel, runtimeInputs, constants)
    }

    /// The conversion of an op with a typed kernel: its run-time inputs are
    /// the layer's, the rest its constants.
    static func converter(_ kernel: @escaping TypedKernels.Kernel) -> ONNXOperators.Converter {
        { node in
            let runtime = node.node.inputs.indices.filter { node.has($0) && node.initializers[$0] == nil }
            let constants = try node.node.inputs.indices.map { try node.initializers[$0]?.typed() }
            return ConvertedNode(layer: TypedKernelLayer(node: node, kernel: kernel, runtimeInputs: runtime, constants: constants),
                                 inputs: runtime)
        }
    }

    var layerName: String { node.node.opType }

    /// The kernel's outputs on `inputs` (float32, one per run-time input).
    private func outputs(_ inputs: [TypedTensor]) throws -> [TypedTensor] {
        var given = constants
        for (k, i) in runtimeInputs.enumerated() { given[i] = inputs[k] }
        guard let outputs = try TypedKernels.outputs(of: node, given) else {
            throw node.error("its kernel does not compute \(inputs.map { "\($0.elementType)" }.joined(separator: " and ")) values")
        }
        guard outputs.count >= node.node.outputs.count else {
            throw node.error("has \(node.node.outputs.count) outputs; its kernel makes \(outputs.count)")
        }
        return Array(outputs.prefix(node.node.outputs.count))
    }

    /// Found by running the kernel on zeros of these shapes: the output
    /// shapes follow from the input shapes and the constants.
    func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, runtimeInputs.count, layer: layerName)
        return try outputs(inputShapes.map { try TypedTensor(zerosOf: .float32, shape: $0) }).map(\.shape)
    }

    /// Whether the kernel makes a sequence or optional on zeros of the
    /// run-time inputs' shapes in `node`, which no float layer can hold.
    func makesContainers(on node: ONNXNodeContext) throws -> Bool {
        try outputs(runtimeInputs.map { try TypedTensor(zerosOf: .float32, shape: node.shape($0)) }).contains { $0.container != nil }
    }

    func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let computed = try self.outputs(inputs.map { TypedTensor($0) })
        guard computed.map(\.shape) == outputs.map(\.shape) else {
            throw LayerKitError.shapeMismatch("\(node.label): the outputs must be of shapes "
                                              + computed.map { Tensor.describe($0.shape) }.joined(separator: ", "))
        }
        for (value, output) in zip(computed, outputs) { try value.write(into: output) }
    }
}
