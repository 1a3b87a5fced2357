import LayerKitONNX

/// The load-time checks onnxruntime makes on a graph (its `Graph::Resolve`),
/// before any node becomes a layer: every value name is defined once
/// (graph inputs, initializers, node outputs), every use is defined, the
/// graph has no cycle, and each standard node lists as many inputs and
/// outputs as its op allows at the model's opset, at a version of its
/// definition LayerKit implements, with inputs of the element types its
/// schema allows where they are known (`checkTypes`). Errors name the node.
enum ONNXValidation {
    /// `model` with its nodes in a topological order (the file's order when
    /// it already is one) and in their current spelling (`currentForm`), or
    /// the first violation as `invalidModel`.
    static func validated(_ model: ONNXModel) throws -> ONNXModel {
        let graph = model.graph
        let opset = model.defaultOpset ?? 0
        let mlOpset = model.opsetImports.first { $0.domain == ONNXOperators.mlDomain }?.version ?? 1
        var inputNames = Set<String>()
        for input in graph.inputs {
            guard !input.name.isEmpty else { throw LayerKitError.invalidModel("a graph input has an empty name") }
            guard inputNames.insert(input.name).inserted else {
                throw LayerKitError.invalidModel("graph input '\(input.name)' is declared twice")
            }
        }
        var outputNames = Set<String>()
        for output in graph.outputs {
            guard !output.name.isEmpty else { throw LayerKitError.invalidModel("a graph output has an empty name") }
            guard outputNames.insert(output.name).inserted else {
                throw LayerKitError.invalidModel("graph output '\(output.name)' is declared twice")
            }
        }
        // Which node makes each node output.
        var producer: [String: Int] = [:]
        for (position, node) in graph.nodes.enumerated() {
            if node.isStandard, let op = ONNXOperators.table[node.opType] {
                try checkVersion(node, opset, implemented: op.implemented, replacement: op.replacement)
                // An op only load-time folding computes declares no arity.
                if let arity = op.arity?(opset) {
                    try check(node.inputs.count, arity.inputs, "inputs", node, opset)
                    try check(node.outputs.count, arity.outputs, "outputs", node, opset)
                }
            } else if node.domain == ONNXOperators.mlDomain, let arity = ONNXOperators.mlTable[node.opType]?.arity?(mlOpset) {
                try check(node.inputs.count, arity.inputs, "inputs", node, mlOpset)
                try check(node.outputs.count, arity.outputs, "outputs", node, mlOpset)
            }
            for output in node.outputs where !output.isEmpty {
                if inputNames.contains(output) {
                    throw LayerKitError.invalidModel("\(node.label) writes '\(output)', which is a graph input")
                }
                if graph.initializers[output] != nil {
                    throw LayerKitError.invalidModel("\(node.label) writes '\(output)', which is an initializer")
                }
                if let other = producer.updateValue(position, forKey: output) {
                    let also = other == position ? "twice" : "and so does \(graph.nodes[other].label)"
                    throw LayerKitError.invalidModel("\(node.label) writes '\(output)' \(also)")
                }
            }
        }
        // Kahn's algorithm, taking ready nodes in file order.
        var waiting = [Int](repeating: 0, count: graph.nodes.count)
        var readers: [Int: [Int]] = [:]
        for (position, node) in graph.nodes.enumerated() {
            for input in Set(node.inputs) where !input.isEmpty {
                if let source = producer[input] {
                    waiting[position] += 1
                    readers[source, default: []].append(position)
                } else if !inputNames.contains(input) && graph.initializers[input] == nil {
                    throw LayerKitError.invalidModel(
                        "\(node.label) reads '\(input)', which no graph input, initializer or node makes")
                }
            }
        }
        var ready = graph.nodes.indices.filter { waiting[$0] == 0 }.reversed() as [Int]
        var order: [Int] = []
        order.reserveCapacity(graph.nodes.count)
        while let next = ready.popLast() {
            order.append(next)
            var freed: [Int] = []
            for reader in readers[next] ?? [] {
                waiting[reader] -= 1
                if waiting[reader] == 0 { freed.append(reader) }
            }
            // Keep the ready stack's top the earliest node in the file.
            if !freed.isEmpty { ready = (ready + freed).sorted(by: >) }
        }
        if var stuck = graph.nodes.indices.first(where: { waiting[$0] > 0 }) {
            // Walk back through unfinished producers until one repeats: it is on the cycle.
            var seen = Set<Int>()
            while seen.insert(stuck).inserted,
                  let back = graph.nodes[stuck].inputs.lazy.compactMap({ producer[$0] }).first(where: { waiting[$0] > 0 }) {
                stuck = back
            }
            throw LayerKitError.invalidModel("\(graph.nodes[stuck].label) is on a cycle: it reads, through other nodes, "
                                             + "a value it makes")
        }
        var sorted = model
        var names = inputNames.union(graph.initializers.keys).union(producer.keys)
        sorted.graph.nodes = try order.map { try namingOmittedOutputs(currentForm(graph.nodes[$0], opset), at: $0, taken: &names) }
        try checkTypes(sorted, opset: opset)
        return sorted
    }

    /// `node` with each omitted output (an empty name before a listed one:
    /// LSTM's `["", "Y_h"]`) given a name no other value has, for the ops
    /// whose one layer makes every output (`ONNXOperators.namesOmittedOutputs`):
    /// the importer pairs a layer's outputs with named outputs, and nothing
    /// reads these. `taken` holds every value name, and gets the new ones.
    static func namingOmittedOutputs(_ node: ONNXNode, at position: Int, taken: inout Set<String>) -> ONNXNode {
        guard node.isStandard, ONNXOperators.namesOmittedOutputs.contains(node.opType), node.outputs.contains("") else {
            return node
        }
        var named = node
        let owner = node.name.isEmpty ? "\(node.opType)_\(position)" : node.name
        for (i, output) in node.outputs.enumerated() where output.isEmpty {
            var name = "\(owner) omitted output \(i)"
            while taken.contains(name) { name += "'" }
            taken.insert(name)
            named.outputs[i] = name
        }
        return named
    }

    /// `node` as the current version of its op spells an attribute an older
    /// one spelled otherwise, where both the load-time folding and the
    /// converter read it: Cast before opset 6 names its target type
    /// (`to: "FLOAT"`), from 6 it gives the type's code.
    static func currentForm(_ node: ONNXNode, _ opset: Int) throws -> ONNXNode {
        guard node.isStandard, node.opType == "Cast", opset < 6, case .string(let name)? = node.attributes["to"] else {
            return node
        }
        guard let code = (1...64).first(where: { ONNXDataType(rawValue: $0).description == name.uppercased() }) else {
            throw LayerKitError.invalidModel("\(node.label): attribute 'to' is '\(name)', which names no ONNX data type")
        }
        var current = node
        current.attributes["to"] = .int(code)
        return current
    }

    /// Throws when the model's opset resolves `node`'s op to a definition
    /// ONNX deprecated or newer than `implemented`, the newest its
    /// declaration implements (`ONNXOperator.implemented`; `replacement`,
    /// the op a newer opset uses instead, is named): the version numbers
    /// alone do not refuse a model, only an op whose meaning LayerKit does
    /// not know.
    static func checkVersion(_ node: ONNXNode, _ opset: Int, implemented: Int?, replacement: String? = nil) throws {
        guard let version = ONNXOpVersions.changes[node.opType]?.last(where: { $0 <= opset }) else { return }
        if ONNXOpVersions.deprecated[node.opType]?.contains(version) == true {
            let replacement = replacement.map { "use \($0) at this opset, or " } ?? ""
            throw LayerKitError.invalidModel("\(node.label): \(node.opType) at opset \(opset) is its version \(version), "
                                             + "which ONNX deprecated (onnx.checker and onnxruntime refuse it too); "
                                             + "\(replacement)export the model at an opset below \(version)")
        }
        guard let newest = implemented, version > newest else { return }
        throw LayerKitError.invalidModel("\(node.label): \(node.opType) at opset \(opset) is its version \(version), "
                                         + "which LayerKit does not implement (it implements versions up to \(newest)); "
                                         + "convert the model to an older opset with onnx.version_converter")
    }

    private static func check(_ count: Int, _ allowed: ClosedRange<Int>, _ what: String, _ node: ONNXNode,
                              _ opset: Int) throws {
        guard !allowed.contains(count) else { return }
        let range = allowed.upperBound == Int.max ? "at least \(allowed.lowerBound)"
            : allowed.count == 1 ? "\(allowed.lowerBound)" : "\(allowed.lowerBound) to \(allowed.upperBound)"
        throw LayerKitError.invalidModel("\(node.label) lists \(count) \(what); \(node.opType) at opset \(opset) takes \(range)")
    }
}
