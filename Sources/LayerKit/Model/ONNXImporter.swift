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
    /// The layers made by earlier imports of this model, reused where a node
    /// sees the same constants and the shape facts its conversion read
    /// (`Model`'s; nil: every import converts).
    var layerCache: ConvertedNodeCache? = nil

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
        if survey == nil { layerCache?.startImport() }
        var valueIndex: [String: Int] = [:]
        var constantIndex: [String: Int] = [:]
        // Initializers, folded node outputs and integer inputs, by name.
        var constants = model.graph.initializers
        // Elements of the computed values so far, against maxModelElements.
        var total = 0
        // Names made by nodes that failed (surveying) and everything downstream of them.
        var unreachable = Set<String>()
        // Surveying: names computed from an integer, bool or string input (the input
        // each is computed from), whose values a survey does not have.
        var perValue: [String: String] = [:]
        // Element types of runtime values (CastLike's runtime targets): declared in
        // the file (inputs, value_info, outputs) or inferred node by node.
        var declaredTypes: [String: ElementType] = [:]
        for value in model.graph.valueInfo + model.graph.outputs {
            if let code = value.elementType?.rawValue, let type = ElementType(rawValue: code) { declaredTypes[value.name] = type }
        }
        for input in model.graph.feedInputs {
            if let code = input.elementType?.rawValue, let type = ElementType(rawValue: code) { declaredTypes[input.name] = type }
            if let value = inputValues[input.name] {
                // Values come as int64; they fold in the input's declared type (an int32 input wraps as int32).
                if let type = declaredTypes[input.name], type.isInteger, value.dataType.rawValue != type.rawValue {
                    constants[input.name] = ONNXTensor(name: input.name, typed: try value.typed().converted(to: type))
                } else {
                    constants[input.name] = value
                }
                continue
            }
            if survey != nil, let type = input.elementType, !type.isFloatingPoint {
                // Integer inputs are values of the plan; a survey has none.
                perValue[input.name] = input.name
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
            context.inputTypes = zip(node.inputs, known).map { input, constant in
                constant.flatMap { ElementType(rawValue: $0.dataType.rawValue) } ?? declaredTypes[input]
            }
            if node.isStandard, let folded = try fold(context, known) {
                for (output, tensor) in zip(node.outputs, folded) where !output.isEmpty {
                    var tensor = tensor
                    tensor.name = output
                    constants[output] = tensor
                }
                return
            }
            let key = ConvertedNodeCache.Key(position: position, constants: known)
            let converted = try layerCache.map { cache in
                try cache.converted(key, shapes: shapes) { reads in
                    var recorded = context
                    recorded.shapeReads = reads
                    return try convert(recorded)
                }
            } ?? convert(context)
            if let type = ONNXImporter.outputType(of: context) {
                for output in node.outputs where !output.isEmpty && declaredTypes[output] == nil { declaredTypes[output] = type }
            }
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
            let blocking = node.inputs.first(where: unreachable.contains)
            if let input = blocking ?? node.inputs.first(where: { perValue[$0] != nil }) {
                // Its shapes are unknown, but an op LayerKit lacks is named all the same.
                let known = node.isStandard ? ONNXOperators.table[node.opType] != nil  // converted or folded
                    : (try? registry.entry(named: node.opType)) != nil
                guard known else {
                    survey(position, .unsupported("node (\(node.opType)): op '\(node.opType)' is not supported by LayerKit"))
                    unreachable.formUnion(node.outputs)
                    continue
                }
                if blocking != nil {
                    survey(position, .blocked(by: input))
                    unreachable.formUnion(node.outputs)
                } else if let source = perValue[input] {
                    survey(position, .perValue(of: source))
                    for output in node.outputs where !output.isEmpty { perValue[output] = source }
                }
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
                // A graph output known at load (everything before it folded): its
                // exact typed value, and a float32 constant of it for the plan.
                let typed = try constant.typed()
                let tensor = typed.elementType == .string ? try Tensor(shape: typed.shape) : try typed.float32Tensor()
                graph.knownOutputs[graph.outputs.count] = typed
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

    /// The element type of a runtime node's outputs, from its op and its
    /// inputs' types (`context.inputTypes`): what the ops LayerKit runs at
    /// run time make. Nil when unknown.
    static func outputType(of context: ONNXNodeContext) -> ElementType? {
        switch context.node.opType {
        case "Cast": return ((try? context.node.int("to")) ?? nil).flatMap { ElementType(rawValue: $0) }
        case "CastLike": return context.inputTypes.count > 1 ? context.inputTypes[1] : nil
        case "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Not", "IsNaN", "IsInf":
            return .bool
        case "Shape", "Size", "ArgMax", "ArgMin", "NonZero": return .int64
        default: return context.inputTypes.lazy.compactMap { $0 }.first
        }
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
        /// A known op computed from integer, bool or string input `of`,
        /// whose values make the plan (a survey has none).
        case perValue(of: String)
    }

    /// The outputs of `node` computed at load when every input it reads is
    /// known (`known`, per node input), nil when it must run: the integer
    /// and shape folding of `ONNXFolding`, else the node's own layer on the
    /// CPU (its element movement on Int64 for integer data).
    private func fold(_ node: ONNXNodeContext, _ known: [ONNXTensor?]) throws -> [ONNXTensor]? {
        if let folded = try ONNXFolding.outputs(of: node, constants: known) { return folded }
        let given = node.node.inputs.indices.filter { node.has($0) }
        guard !given.isEmpty, given.allSatisfy({ known[$0] != nil }), ONNXOperators.converter(for: node.node.opType) != nil else {
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
            if let mover = layer as? ElementMovingLayer {
                // Element movement is exact for every type: it moves the elements as they are.
                let typed = try data.map { try $0.typed() }
                guard Set(typed.map(\.elementType)).count == 1 else {
                    throw node.error("its inputs are \(typed.map { "\($0.elementType)" }.joined(separator: " and ")); "
                                     + "the op takes one element type")
                }
                return try ONNXImporter.move(mover, typed, outputShapes: shapes).map { ONNXTensor(name: "", typed: $0) }
            }
            if data.contains(where: { !(ElementType(rawValue: $0.dataType.rawValue)?.isFloatingPoint ?? false) }) { return nil }
            if try data.contains(where: { try $0.elementCount() == 0 }) {
                // Nothing to compute when every output is empty too (a Relu of a zero batch).
                if try shapes.allSatisfy({ try Tensor.elementCount(of: $0) == 0 }) {
                    return shapes.map { ONNXTensor(name: "", dims: $0, floats: []) }
                }
                throw node.error("a zero-size input reaches its float layer; LayerKit runs zero-size tensors only "
                                 + "through shape, element-moving and folding ops")
            }
            let tensors = try data.map { try Tensor(shape: $0.dims, values: $0.anyFloats()) }
            let outputs = try shapes.map { try Tensor(shape: $0) }
            try layer.evaluate(inputs: tensors, outputs: outputs)
            return outputs.map { ONNXTensor(name: "", dims: $0.shape, floats: $0.values) }
        } catch {
            throw node.naming(error)
        }
    }

    /// `mover`'s element movement on `inputs` (all of one element type),
    /// into outputs of `outputShapes` of that type: on the elements' bits
    /// (strings as they are), so any type moves exactly.
    private static func move(_ mover: ElementMovingLayer, _ inputs: [TypedTensor],
                             outputShapes: [[Int]]) throws -> [TypedTensor] {
        let type = inputs[0].elementType
        if type == .string {
            return try zip(moveElements(mover, inputs.map(\.strings), shapes: inputs.map(\.shape), outputShapes: outputShapes, zero: ""),
                           outputShapes).map { try TypedTensor(shape: $1, strings: $0) }
        }
        // Every element's bits as a word of the type's width, stored back as they were.
        switch type.byteWidth {
        case 2: return try moveWords(mover, inputs, UInt16.self, outputShapes: outputShapes)
        case 4: return try moveWords(mover, inputs, UInt32.self, outputShapes: outputShapes)
        case 8: return try moveWords(mover, inputs, UInt64.self, outputShapes: outputShapes)
        default: return try moveWords(mover, inputs, UInt8.self, outputShapes: outputShapes)
        }
    }

    /// `move` on the elements' little-endian words of type `Word` (the element type's width).
    private static func moveWords<Word: FixedWidthInteger>(_ mover: ElementMovingLayer, _ inputs: [TypedTensor], _: Word.Type,
                                                           outputShapes: [[Int]]) throws -> [TypedTensor] {
        let size = MemoryLayout<Word>.size
        let words = inputs.map { tensor in
            tensor.bytes.withUnsafeBytes { raw in
                (0..<tensor.count).map { Word(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * size, as: Word.self)) }
            }
        }
        let moved = try moveElements(mover, words, shapes: inputs.map(\.shape), outputShapes: outputShapes, zero: 0)
        return try zip(moved, outputShapes).map { values, shape in
            var bytes = [UInt8](repeating: 0, count: values.count * size)
            bytes.withUnsafeMutableBytes { raw in
                for (i, word) in values.enumerated() { raw.storeBytes(of: word.littleEndian, toByteOffset: i * size, as: Word.self) }
            }
            return try TypedTensor(elementType: inputs[0].elementType, shape: shape, bytes: bytes)
        }
    }

    /// `mover`'s element movement on arrays of `Element`, into outputs of `outputShapes`.
    private static func moveElements<Element>(_ mover: ElementMovingLayer, _ inputs: [[Element]], shapes: [[Int]],
                                              outputShapes: [[Int]], zero: Element) throws -> [[Element]] {
        let sources = inputs.map { values in
            let buffer = UnsafeMutableBufferPointer<Element>.allocate(capacity: max(values.count, 1))
            _ = buffer.initialize(from: values)
            return (buffer, values.count)
        }
        let targets = try outputShapes.map { shape in
            let count = try Tensor.elementCount(of: shape)
            let buffer = UnsafeMutableBufferPointer<Element>.allocate(capacity: max(count, 1))
            buffer.initialize(repeating: zero)
            return (buffer, count)
        }
        defer {
            for (buffer, _) in sources + targets {
                buffer.deinitialize()
                buffer.deallocate()
            }
        }
        try mover.moveElements(inputs: sources.map { UnsafeBufferPointer(rebasing: $0.0[..<$0.1]) },
                               inputShapes: shapes, outputs: targets.map { UnsafeMutableBufferPointer(rebasing: $0.0[..<$0.1]) })
        return targets.map { Array($0.0[..<$0.1]) }
    }

    /// A node as a layer: a standard op, or a custom layer from the registry.
    private func convert(_ node: ONNXNodeContext) throws -> ConvertedNode {
        let opType = node.node.opType
        if node.node.isStandard {
            guard let converter = ONNXOperators.converter(for: opType) else {
                // An op only the typed kernels of folding compute runs at prepare:
                // the values it reads are asked for (`ValueRequests`).
                if ONNXOperators.table[opType]?.fold != nil {
                    for i in node.node.inputs.indices where node.has(i) && node.initializers[i] == nil {
                        node.requests?.record(node.node.inputs[i])
                    }
                }
                throw node.error("op '\(opType)' is not supported by LayerKit (supported: "
                                 + "\(ONNXOperators.supportedOps.joined(separator: ", ")))")
            }
            // Constructors throw their own messages: the node is named here, for every op.
            do { return try converter(node) } catch { throw node.naming(error) }
        }
        if node.node.domain == ONNXOperators.mlDomain {
            // The ai.onnx.ml ops LayerKit knows; others may still be registered custom layers.
            if let convert = ONNXOperators.mlTable[opType]?.convert {
                do { return try convert(node) } catch { throw node.naming(error) }
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
                             + "was not found; " + LayerRegistry.missingLayerAdvice(opType))
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
