import LayerKitCore

// ONNX's lexical scoping: a control-flow body (If's branches, Loop's and
// Scan's body) may read any value of the graphs around it by name. These
// are the facts the importer needs to wire such reads as inputs of the
// node that holds the body.

extension ONNXGraph {
    /// The names the graph reads but does not define (by its inputs,
    /// initializers or nodes), in the order of first use: values of the
    /// graphs around it. Names its nodes' own bodies read from outside them
    /// count as read at that node, so a value an If inside a Loop's body
    /// reads from the main graph is an outer name of the Loop's body too.
    public var outerNames: [String] {
        var defined = Set(inputs.map(\.name) + initializerNames)
        var seen = Set<String>(), names: [String] = []
        func read(_ name: String) {
            if !name.isEmpty, !defined.contains(name), seen.insert(name).inserted { names.append(name) }
        }
        for node in nodes {
            node.inputs.forEach(read)
            node.implicitInputs.forEach(read)
            defined.formUnion(node.outputs)
        }
        outputs.map(\.name).forEach(read)
        return names
    }
}

extension ONNXNode {
    /// The node's graph attributes (If's branches, a Loop's or Scan's body),
    /// in the order of their attribute names.
    public var subgraphs: [ONNXGraph] {
        attributes.sorted { $0.key < $1.key }.flatMap { _, value -> [ONNXGraph] in
            switch value {
            case .graph(let graph): return [graph]
            case .graphs(let graphs): return graphs
            default: return []
            }
        }
    }

    /// The values of the enclosing graphs the node's bodies read (their
    /// `outerNames`, each once): onnxruntime's "implicit inputs". They are
    /// inputs of the node as much as its listed ones, for ordering the
    /// graph and for knowing what a run must have computed first.
    public var implicitInputs: [String] {
        var seen = Set<String>()
        return subgraphs.flatMap(\.outerNames).filter { seen.insert($0).inserted }
    }
}

extension ONNXModel {
    /// A model of `graph` alone, importing `opsetImports`: a control-flow
    /// body validated and imported as a graph of its own.
    public init(subgraph graph: ONNXGraph, opsetImports: [(domain: String, version: Int)]) {
        self.init(irVersion: Self.supportedIRVersions.upperBound, opsetImports: opsetImports, producerName: "",
                  producerVersion: "", graph: graph)
    }

    /// The model with each node's implicit inputs appended to its inputs,
    /// so an importer orders, wires and folds them as it does the listed
    /// ones; a name no earlier node, input or initializer makes is then an
    /// ordinary "reads 'x', which no ... makes" error at import.
    public func bindingOuterScope() -> ONNXModel {
        var model = self
        for k in model.graph.nodes.indices {
            model.graph.nodes[k].inputs += model.graph.nodes[k].implicitInputs
        }
        return model
    }
}

extension ONNXValueInfo {
    /// A value named `name` of element type `type` and dimensions `dims`
    /// (nil: rank unknown).
    public init(_ name: String, type: ONNXDataType?, dims: [ONNXDimension]?) {
        self.init(name: name, elementType: type, dims: dims)
    }
}
