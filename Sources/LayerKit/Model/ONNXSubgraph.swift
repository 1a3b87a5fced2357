import LayerKitONNX

/// A control-flow body (an If branch, a Loop's or Scan's body) made ready to
/// run: its graph, as a model of its own, validated and given an importer
/// once per execution of its node; each iteration then imports it with
/// every input known, so every node folds through the same exact kernels as
/// load-time folding (`ONNXImporter.exactOutputs`) and the CPU evaluator's
/// float layers. So a body's values may change shape from one iteration to
/// the next (a Loop growing a tensor), and a body runs every op a main graph
/// folds, without a second executor.
///
/// The body's inputs are its formal ones (ONNX's: none for If; the
/// iteration, condition and carried values for Loop; states and slices for
/// Scan) followed by the node's implicit inputs (`ONNXNode.implicitInputs`),
/// values of the graphs around it, by name.
struct ONNXSubgraph {
    private let importer: ONNXImporter
    private let graph: ONNXGraph
    /// The outer values the body reads, as the constants of its import.
    private let outerValues: [String: ONNXTensor]

    /// How many iterations a Loop or Scan may run (65,536): a condition that
    /// never ends, or a trip count of 2^63, stops with an error here rather
    /// than running for ever.
    static let maxIterations = 1 << 16

    /// Why an If, Loop or Scan runs on the CPU, as the placement summary says.
    static let whyOnCPU = "control flow runs on the CPU: its bodies' nodes run by the CPU evaluator"

    /// The body `graph` of `node`, its formal inputs of types `types` (in the
    /// order of the body's inputs), reading `scope` from the outer graphs.
    init(_ graph: ONNXGraph, of node: ONNXNodeContext, types: [ElementType], scope: [String: TypedTensor]) throws {
        guard graph.inputs.count == types.count else {
            throw node.error("its body '\(graph.name)' has \(graph.inputs.count) inputs; the op gives it \(types.count)")
        }
        var outerValues: [String: ONNXTensor] = [:]
        for name in graph.outerNames {
            guard let value = scope[name] else {
                throw node.error("its body '\(graph.name)' reads '\(name)', which no enclosing graph makes")
            }
            outerValues[name] = ONNXTensor(name: name, typed: value)
        }
        var body = graph
        // Shapes may change per iteration: the body's declared dims are not held to.
        // A sequence or optional input keeps its declared form (its value is a container).
        body.inputs = zip(graph.inputs, types).map { info, type in
            info.form != nil ? info : ONNXValueInfo(info.name, type: ONNXDataType(rawValue: type.rawValue), dims: nil)
        }
        body.inputs += try graph.outerNames.compactMap { name in
            try outerValues[name].map { value in
                var info = ONNXValueInfo(name, type: value.dataType, dims: nil)
                if value.isContainer { (info.form, info.elementType) = (try value.typed().form, nil) }
                return info
            }
        }
        let model = ONNXModel(subgraph: body, opsetImports: [("", node.opset)])
        do {
            importer = try ONNXImporter(model: model, registry: .shared)
        } catch {
            throw node.error("its body '\(graph.name)': \(error)")
        }
        (self.graph, self.outerValues) = (body, outerValues)
    }

    /// The body's outputs for its formal `inputs`.
    func run(_ inputs: [TypedTensor]) throws -> [TypedTensor] {
        var values = outerValues
        for (info, value) in zip(graph.inputs, inputs) { values[info.name] = ONNXTensor(name: info.name, typed: value) }
        let computed = try importer.graph(inputShapes: [:], inputValues: values)
        return try graph.outputs.indices.map { k in
            guard let value = computed.knownOutputs[k] else {
                throw LayerKitError.invalidModel("body '\(graph.name)': output '\(graph.outputs[k].name)' could not be "
                                                 + "computed: a node before it has no exact or CPU kernel for its values")
            }
            return value
        }
    }

    /// The values of `node`'s implicit inputs, by name: the last of its
    /// `inputs` (`ONNXModel.bindingOuterScope()` appended them).
    static func scope(of node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [String: TypedTensor] {
        let names = node.node.implicitInputs
        let first = node.node.inputs.count - names.count
        guard first >= 0, inputs.count == node.node.inputs.count else { throw node.error("its outer values are not bound") }
        var scope: [String: TypedTensor] = [:]
        for (k, name) in names.enumerated() {
            guard let value = inputs[first + k] else { throw node.error("its body reads '\(name)', which is not known") }
            scope[name] = value
        }
        return scope
    }

    /// How many of `node`'s inputs are its own (ONNX's), before the implicit ones.
    static func formalInputCount(of node: ONNXNodeContext) -> Int {
        node.node.inputs.count - node.node.implicitInputs.count
    }
}
