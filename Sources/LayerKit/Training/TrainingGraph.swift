import LayerKitONNX

/// A model's graph as training runs it, for one batch size: every node its
/// own step (no fusion), and for each step the model initializers its layer
/// holds (by role) or reads as graph constants, so gradients can be routed
/// back to initializer names and the updated values written back to them.
struct TrainingGraph {
    /// The graph for inputs of the batch's shape.
    let graph: ModelGraph
    /// Per step: the ONNX node it was made from.
    let nodes: [ONNXNode]
    /// Per step: role -> the initializer its layer holds in that role.
    let heldParameters: [[String: String]]
    /// Graph constants that are initializers: value index -> initializer name.
    let constantParameters: [Int: String]
    /// The names of the model's initializers (what a trainable name may be).
    let initializerNames: Set<String>

    /// Imports `model` for inputs of `inputShapes` (by input name).
    init(model: ONNXModel, registry: LayerRegistry, inputShapes: [String: [Int]]) throws {
        var importer = try ONNXImporter(model: model, registry: registry)
        importer.keepsEveryNode = true
        graph = try importer.graph(inputShapes: inputShapes)
        // Steps are named as the importer names them: the node's name, or `<op>_<position>`.
        var byName: [String: ONNXNode] = [:]
        for (position, node) in importer.model.graph.nodes.enumerated() {
            byName[node.name.isEmpty ? "\(node.opType)_\(position)" : node.name] = node
        }
        let initializers = importer.model.graph.initializers
        initializerNames = Set(initializers.keys)
        nodes = try graph.steps.map { step in
            guard let node = byName[step.name] else {
                throw LayerKitError.invalidModel("step '\(step.name)' matches no node of the model")
            }
            return node
        }
        heldParameters = zip(graph.steps, nodes).map { step, node in
            guard let layer = step.layer as? DifferentiableLayer else { return [:] }
            var held: [String: String] = [:]
            for parameter in layer.trainableParameters where node.inputs.indices.contains(parameter.nodeInput) {
                let name = node.inputs[parameter.nodeInput]
                if initializers[name] != nil { held[parameter.role] = name }
            }
            return held
        }
        var constants: [Int: String] = [:]
        for (index, value) in graph.values.enumerated() where value.constant != nil && initializers[value.name] != nil {
            constants[index] = value.name
        }
        constantParameters = constants
    }

    /// Every initializer some step can train: held by a differentiable
    /// layer, or read as a graph constant.
    var trainableCandidates: [String] {
        var names = Set(constantParameters.values)
        for held in heldParameters { names.formUnion(held.values) }
        return names.sorted()
    }

    /// The step label errors use: `name (domain.OpType)`.
    func label(_ step: Int) -> String { graph.steps[step].label }
}
