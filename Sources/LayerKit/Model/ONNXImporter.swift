import LayerKitONNX
import Foundation

/// Turns a decoded ONNX model into a `ModelGraph` for concrete input
/// shapes: each node becomes a layer (standard ops through
/// `ONNXOperators`, others through the `LayerRegistry`, as Core ML finds a
/// custom layer's class), and every value gets its shape.
struct ONNXImporter {
    let model: ONNXModel
    let registry: LayerRegistry
    /// Whether Conv and Gemm steps take in the per-element steps after them
    /// (`ModelGraph.fuseConvolutionEpilogues()`): on unless
    /// `LAYERKIT_EPILOGUES=0` (to measure or compare the unfused graph).
    var fusesEpilogues = ProcessInfo.processInfo.environment["LAYERKIT_EPILOGUES"] != "0"
    /// Whether every node keeps its own step, no fusion at all: training
    /// backpropagates through each node's layer and writes each node's
    /// initializers back, so it needs the graph as the file wrote it.
    var keepsEveryNode = false

    /// An importer for `model`, validated as onnxruntime validates a graph
    /// at load (`ONNXValidation`): its nodes are then in a topological order.
    init(model: ONNXModel, registry: LayerRegistry) throws {
        self.model = try ONNXValidation.validated(model)
        self.registry = registry
    }

    /// The most elements one value of a model may have (1 GiB of Float32):
    /// a shape past it is far more likely a bad attribute (pads of 10,000)
    /// than a model, and would otherwise be allocated and run.
    static let maxValueElements = 1 << 28

    /// The most elements all of a model's computed values (its inputs and
    /// every node's outputs, for one set of input shapes) may hold together
    /// (2 GiB of Float32): a model of small tensors chained thousands of
    /// times, or a few at the per-tensor limit, is refused at load instead of
    /// being planned, allocated and run.
    static let maxModelElements = 1 << 29

    /// The most channels a per-channel weight made from a scalar (PRelu's
    /// slope) may spread over: 2^20, far past real models; the GPU's slice
    /// images hold at most 4 x maxImageArrayLayers channels anyway.
    static let maxChannels = 1 << 20

    /// The default-domain opset the model imports.
    var opset: Int { model.defaultOpset ?? 0 }

    /// The graph for inputs of `inputShapes` (by input name), simplified:
    /// every node whose inputs are known at load is folded into a constant
    /// (`ONNXFolding`), and steps whose outputs nothing reads are dropped.
    /// `inputValues` gives the values of integer inputs (indices, shapes),
    /// which are constants of the plan: a model's integer inputs feed shape
    /// arithmetic and `Gather` indices, which are resolved at load.
    ///
    /// With `survey`, a node that cannot be converted does not stop the
    /// import: `survey` hears what became of each node, by position, and
    /// the graph of the nodes that converted is returned (`inspect`'s view
    /// of how far a model is from running).
    func graph(inputShapes: [String: [Int]], inputValues: [String: ONNXTensor] = [:], requests: ValueRequests? = nil,
               survey: ((Int, NodeOutcome) -> Void)? = nil) throws -> ModelGraph {
        var graph = ModelGraph()
        var valueIndex: [String: Int] = [:]
        var constantIndex: [String: Int] = [:]
        // Initializers, folded node outputs and integer inputs, by name.
        var constants = model.graph.initializers
        // Elements of the computed values so far, against maxModelElements.
        var total = 0
        // Names made by nodes that failed (surveying) and everything downstream of them.
        var unreachable = Set<String>()
        for input in model.graph.feedInputs {
            if let value = inputValues[input.name] {
                constants[input.name] = value
                continue
            }
            if survey != nil, let type = input.elementType, !type.isFloatingPoint {
                // Integer inputs are needed as values; a survey has none.
                unreachable.insert(input.name)
                continue
            }
            guard input.elementType?.isFloatingPoint ?? false else {
                throw LayerKitError.invalidModel("input '\(input.name)' is \(input.elementType?.description ?? "untyped"); "
                                                 + "LayerKit runs float inputs as float32, and integer, bool and string "
                                                 + "inputs as values given at prepare")
            }
            guard let shape = inputShapes[input.name] else {
                throw LayerKitError.invalidModel("no shape for input '\(input.name)'")
            }
            guard let count = try? Tensor.elementCount(of: shape), count <= ONNXImporter.maxValueElements else {
                throw LayerKitError.invalidModel("input '\(input.name)' of shape \(Tensor.describe(shape)) would hold more "
                                                 + "than \(ONNXImporter.maxValueElements >> 20)M elements (1 GiB), LayerKit's limit for one tensor")
            }
            total += count
            guard total <= ONNXImporter.maxModelElements else {
                throw LayerKitError.invalidModel("the inputs up to '\(input.name)' would hold more than "
                                                 + "\(ONNXImporter.maxModelElements >> 20)M elements (2 GiB), LayerKit's limit for a model")
            }
            let index = graph.addValue(input.name, shape: shape)
            valueIndex[input.name] = index
            graph.inputs.append(index)
        }
        /// Converts (or folds) one node into `graph`.
        func add(_ node: ONNXNode, at position: Int) throws {
            let name = node.name.isEmpty ? "\(node.opType)_\(position)" : node.name
            var named = node
            named.name = name
            let shapes: [[Int]?] = try node.inputs.map { input in
                if input.isEmpty { return nil }
                if let index = valueIndex[input] { return graph.values[index].shape }
                if let constant = constants[input] { return constant.dims }
                throw LayerKitError.invalidModel(
                    "node '\(name)' (\(node.opType)) reads '\(input)', which no input, initializer or earlier node makes")
            }
            let known = node.inputs.map { valueIndex[$0] == nil ? constants[$0] : nil }
            var context = ONNXNodeContext(node: named, opset: opset, inputShapes: shapes, initializers: known)
            context.requests = requests
            if node.isStandard, let folded = try fold(context, known) {
                for (output, tensor) in zip(node.outputs, folded) where !output.isEmpty {
                    var tensor = tensor
                    tensor.name = output
                    constants[output] = tensor
                }
                return
            }
            let converted = try convert(context)
            var inputs: [Int] = []
            for i in converted.inputs where context.has(i) {
                let input = node.inputs[i]
                if let index = valueIndex[input] {
                    inputs.append(index)
                } else if let reshaped = converted.reshapedConstants[i] {
                    inputs.append(graph.addValue(input, shape: reshaped.shape, constant: reshaped))
                } else if let index = constantIndex[input] {
                    inputs.append(index)
                } else {
                    let constant = try context.constant(i, "input '\(input)'")
                    let index = graph.addValue(input, shape: constant.shape, constant: constant)
                    constantIndex[input] = index
                    inputs.append(index)
                }
            }
            let outputNames = node.outputs.filter { !$0.isEmpty }
            guard let layer = converted.layer else {
                // No work: the output is the input's value; other outputs are known at load.
                for (index, tensor) in converted.constantOutputs where index < node.outputs.count {
                    constants[node.outputs[index]] = ONNXTensor(name: node.outputs[index], dims: tensor.shape,
                                                                floats: tensor.values)
                }
                guard let source = inputs.first, outputNames.count == 1 + converted.constantOutputs.count else {
                    throw context.error("expects one input and one output")
                }
                valueIndex[outputNames[0]] = source
                graph.steps.append(.init(name: name, opType: node.opType, domain: node.domain, layer: nil,
                                         inputs: [source], outputs: [source]))
                return
            }
            let outputShapes: [[Int]]
            do {
                outputShapes = try layer.outputShapes(forInputShapes: inputs.map { graph.values[$0].shape })
            } catch {
                throw context.naming(error)
            }
            guard outputShapes.count == outputNames.count, outputNames.count == node.outputs.count else {
                throw context.error("has \(node.outputs.count) outputs; LayerKit's layer makes \(outputShapes.count)")
            }
            for shape in outputShapes where try Tensor.elementCount(of: shape) > ONNXImporter.maxValueElements {
                throw context.error("its output \(Tensor.describe(shape)) would hold more than "
                                    + "\(ONNXImporter.maxValueElements >> 20)M elements (1 GiB), LayerKit's limit for one tensor")
            }
            total += try outputShapes.reduce(0) { $0 + (try Tensor.elementCount(of: $1)) }
            guard total <= ONNXImporter.maxModelElements else {
                throw context.error("the model's values up to this node would hold more than "
                                    + "\(ONNXImporter.maxModelElements >> 20)M elements (2 GiB), LayerKit's limit for a model")
            }
            let outputs = zip(outputNames, outputShapes).map { graph.addValue($0, shape: $1) }
            for (output, index) in zip(outputNames, outputs) { valueIndex[output] = index }
            graph.steps.append(.init(name: name, opType: node.opType, domain: node.domain, layer: layer,
                                     inputs: inputs, outputs: outputs))
        }
        for (position, node) in model.graph.nodes.enumerated() {
            guard let survey else {
                try add(node, at: position)
                continue
            }
            if let input = node.inputs.first(where: unreachable.contains) {
                // Its shapes are unknown, but an op LayerKit lacks is named all the same.
                let known = node.isStandard ? ONNXOperators.table[node.opType] != nil
                    : (try? registry.entry(named: node.opType)) != nil
                survey(position, known ? .blocked(by: input)
                       : .unsupported("node (\(node.opType)): op '\(node.opType)' is not supported by LayerKit"))
                unreachable.formUnion(node.outputs)
                continue
            }
            let steps = graph.steps.count
            do {
                try add(node, at: position)
                survey(position, graph.steps.count > steps ? .converted : .folded)
            } catch {
                survey(position, .unsupported("\(error)"))
                unreachable.formUnion(node.outputs)
            }
        }
        if survey != nil { return graph }
        for output in model.graph.outputs {
            if let index = valueIndex[output.name] {
                graph.outputs.append(index)
            } else if let constant = constants[output.name] {
                // A graph output known at load (everything before it folded).
                let tensor = try Tensor(shape: constant.dims, values: ONNXFolding.isInteger(constant)
                                        ? constant.int64s().map(Float.init) : constant.floats())
                graph.outputs.append(graph.addValue(output.name, shape: tensor.shape, constant: tensor))
            } else {
                throw LayerKitError.invalidModel("graph output '\(output.name)' is made by no node")
            }
        }
        graph.removeUnreadSteps()
        guard !keepsEveryNode else { return graph }
        graph.fuseChannelShuffles()
        graph.fuseFlattenedGemms()
        if fusesEpilogues { graph.fuseConvolutionEpilogues() }
        return graph
    }

    /// The graph inputs whose values `value` is computed from (itself, when
    /// it is one): what must be known at prepare for `value` to be.
    func graphInputs(feeding value: String) -> Set<String> {
        let inputs = Set(model.graph.feedInputs.map(\.name))
        var producer: [String: ONNXNode] = [:]
        for node in model.graph.nodes { for output in node.outputs where !output.isEmpty { producer[output] = node } }
        var found = Set<String>(), seen = Set<String>(), pending = [value]
        while let name = pending.popLast() {
            guard seen.insert(name).inserted else { continue }
            if inputs.contains(name) { found.insert(name) }
            pending += producer[name]?.inputs.filter { !$0.isEmpty } ?? []
        }
        return found
    }

    /// What the import made of one node.
    enum NodeOutcome {
        /// A step of the graph (a layer, or a pass-through).
        case converted
        /// Computed at load: its outputs are constants.
        case folded
        /// Refused: why, naming the node.
        case unsupported(String)
        /// Not reached: it reads `by`, which a refused node makes (or
        /// reads, further up).
        case blocked(by: String)
    }

    /// The outputs of `node` computed at load when every input it reads is
    /// known (`known`, per node input), nil when it must run: the integer
    /// and shape folding of `ONNXFolding`, else the node's own layer on the
    /// CPU (its element movement on Int64 for integer data).
    private func fold(_ node: ONNXNodeContext, _ known: [ONNXTensor?]) throws -> [ONNXTensor]? {
        if let folded = try ONNXFolding.outputs(of: node, constants: known) { return folded }
        let given = node.node.inputs.indices.filter { node.has($0) }
        guard !given.isEmpty, given.allSatisfy({ known[$0] != nil }), ONNXOperators.table[node.node.opType] != nil else {
            return nil
        }
        let converted = try convert(node)
        let inputs = converted.inputs.filter { node.has($0) }
        // Every given input is known (checked above): the layer's inputs among them.
        let data = inputs.compactMap { i in
            converted.reshapedConstants[i].map { ONNXTensor(name: "", dims: $0.shape, floats: $0.values) } ?? known[i]
        }
        guard let layer = converted.layer else {
            // Identity, and Dropout without its mask: the input passes through.
            return node.node.outputs.filter({ !$0.isEmpty }).count == 1 ? data.first.map { [$0] } : nil
        }
        do {
            let shapes = try layer.outputShapes(forInputShapes: data.map(\.dims))
            for shape in shapes { _ = try ONNXFolding.checkedCount(shape, node) }
            if data.contains(where: ONNXFolding.isInteger) {
                guard let mover = layer as? ElementMovingLayer else { return nil }
                let outputs = try ONNXImporter.move(mover, data.map { try $0.int64s().map { Int64($0) } },
                                                    shapes: data.map(\.dims), outputShapes: shapes)
                return zip(shapes, outputs).map { ONNXTensor(name: "", dims: $0, int64s: $1) }
            }
            let tensors = try data.map { try Tensor(shape: $0.dims, values: $0.floats()) }
            let outputs = try shapes.map { try Tensor(shape: $0) }
            try layer.evaluate(inputs: tensors, outputs: outputs)
            return outputs.map { ONNXTensor(name: "", dims: $0.shape, floats: $0.values) }
        } catch {
            throw node.naming(error)
        }
    }

    /// `mover`'s element movement on Int64 `inputs` of `shapes`, into outputs of `outputShapes`.
    private static func move(_ mover: ElementMovingLayer, _ inputs: [[Int64]], shapes: [[Int]],
                             outputShapes: [[Int]]) throws -> [[Int64]] {
        let sources = inputs.map { values in
            let buffer = UnsafeMutableBufferPointer<Int64>.allocate(capacity: max(values.count, 1))
            _ = buffer.initialize(from: values)
            return buffer
        }
        let targets = try outputShapes.map { shape in
            let count = try Tensor.elementCount(of: shape)
            let buffer = UnsafeMutableBufferPointer<Int64>.allocate(capacity: max(count, 1))
            buffer.initialize(repeating: 0)
            return UnsafeMutableBufferPointer(rebasing: buffer[..<count])
        }
        defer { (sources + targets).forEach { $0.baseAddress?.deallocate() } }
        try mover.moveElements(inputs: zip(sources, inputs).map { UnsafeBufferPointer(rebasing: $0[..<$1.count]) },
                               inputShapes: shapes, outputs: targets)
        return targets.map(Array.init)
    }

    /// A node as a layer: a standard op, or a custom layer from the registry.
    private func convert(_ node: ONNXNodeContext) throws -> ConvertedNode {
        let opType = node.node.opType
        if node.node.isStandard {
            guard let converter = ONNXOperators.converter(for: opType) else {
                throw node.error("op '\(opType)' is not supported by LayerKit (supported: "
                                 + "\(ONNXOperators.supportedOps.joined(separator: ", ")))")
            }
            // Constructors throw their own messages: the node is named here, for every op.
            do { return try converter(node) } catch { throw node.naming(error) }
        }
        if node.node.domain == ONNXOperators.mlDomain {
            // The ai.onnx.ml ops LayerKit knows; others may still be registered custom layers.
            if let op = ONNXOperators.mlTable[opType] {
                do { return try op.convert(node) } catch { throw node.naming(error) }
            }
            guard (try? registry.entry(named: opType)) != nil else {
                throw node.error("ai.onnx.ml op '\(opType)' is not supported by LayerKit (supported: "
                                 + "\(ONNXOperators.supportedMLOps.joined(separator: ", "))); a CustomLayer registered "
                                 + "as '\(opType)' would run it")
            }
        }
        do { return try customLayer(node) } catch { throw node.naming(error) }
    }

    /// A node of another domain: the registry's layer of that op type, made
    /// from the node's attributes, with its constant inputs as weights.
    private func customLayer(_ node: ONNXNodeContext) throws -> ConvertedNode {
        let opType = node.node.opType
        let entry: LayerRegistry.Entry
        do {
            entry = try registry.entry(named: opType)
        } catch {
            throw node.error("a custom layer implementation for op type '\(opType)' (domain '\(node.node.domain)') "
                             + "was not found; register a CustomLayer class named '\(opType)' with "
                             + "LayerRegistry.shared.register(_:)")
        }
        let layer: CustomLayer
        var inputs: [Int] = []
        var weights: [Data] = []
        do {
            if let makeForNode = entry.makeForNode {
                var constants: [(name: String, data: Data)] = []
                for i in node.node.inputs.indices where node.has(i) {
                    if i > 0, node.initializers[i] != nil {
                        let name = node.node.inputs[i]
                        constants.append((name, try node.constant(i, "weight '\(name)'").littleEndianData))
                    } else {
                        inputs.append(i)
                    }
                }
                return ConvertedNode(layer: try makeForNode(try node.parameters(), constants), inputs: inputs)
            }
            layer = try entry.make(try node.parameters())
            for i in node.node.inputs.indices where node.has(i) {
                if i > 0, node.initializers[i] != nil {
                    weights.append(try node.constant(i, "weight '\(node.node.inputs[i])'").littleEndianData)
                } else {
                    inputs.append(i)
                }
            }
            if !weights.isEmpty { try layer.setWeightData(weights) }
        } catch {
            throw node.naming(error)
        }
        return ConvertedNode(layer: layer, inputs: inputs)
    }
}
