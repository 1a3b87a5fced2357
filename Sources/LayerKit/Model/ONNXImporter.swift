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
    /// A control-flow node's implicit inputs (the outer values its bodies
    /// read) become inputs of it here, so they are wired, folded and kept
    /// alive as any input (`ONNXModel.bindingOuterScope()`).
    init(model: ONNXModel, registry: LayerRegistry) throws {
        self.model = try ONNXValidation.validated(model).bindingOuterScope()
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
    /// (`ONNXFolding`), a node computing what an earlier one did reads its
    /// outputs (`SharedNodeKey`), and steps whose outputs nothing reads are
    /// dropped. `inputValues` gives the values of the inputs a plan is made for
    /// (`Model`'s prepared inputs: a reshape target, a Conv's weights), which
    /// are constants of the import; other inputs are values of the run,
    /// typed ones computed by `TypedStep`s.
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
        // Initializers, folded node outputs and inputs given values, by name.
        var constants = model.graph.initializers
        // Elements of the computed values so far, against maxModelElements.
        var total = 0
        // Names made by nodes that failed (surveying) and everything downstream of them.
        var unreachable = Set<String>()
        // Surveying: names computed from an input whose values a node needs at
        // prepare (the input each is computed from), which a survey does not have.
        var perValue: [String: String] = [:]
        let requests = requests ?? (survey != nil ? ValueRequests() : nil)
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
            if let form = input.form {
                // A sequence or optional is a constant of the plan: its value is read at prepare.
                requests?.record(input.name)
                throw LayerKitError.invalidModel("input '\(input.name)' is a \(form): LayerKit needs its value at prepare")
            }
            guard let type = declaredTypes[input.name], !type.isComplex else {
                throw LayerKitError.invalidModel("input '\(input.name)' is \(input.elementType?.description ?? "untyped"); "
                                                 + "LayerKit runs inputs of real, integer, bool and string types")
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
            let index = graph.addValue(input.name, shape: shape, type: type)
            valueIndex[input.name] = index
            graph.inputs.append(index)
        }
        /// Makes `context`'s node a `TypedStep` when it reads a typed value
        /// computed at run time (`ModelGraph.Value.isTyped`), or is an
        /// ai.onnx.ml op whose typed kernel takes its float values (a
        /// LabelEncoder to strings or integers), and can be computed exactly; returns
        /// whether it did. Its output shapes and
        /// types come from computing it once on zeros. A node that reads an
        /// integer, bool or string value but cannot be computed so needs
        /// that value at prepare: it is requested (`ValueRequests`), and the
        /// plan is made per value; one reading only float64 values is
        /// converted to its float layer (which reads them as float32).
        func addTypedStep(_ context: ONNXNodeContext, _ known: [ONNXTensor?]) throws -> Bool {
            let node = context.node
            let runtime = node.inputs.indices.filter { context.has($0) && known[$0] == nil }
            let values = runtime.compactMap { valueIndex[node.inputs[$0]] }
            guard values.count == runtime.count, !node.isStandard || values.contains(where: { graph.values[$0].isTyped }) else {
                return false
            }
            let shaping = zip(runtime, values).filter { ONNXShapeInputs.decidesShape(node.opType, input: $0.0) && graph.values[$0.1].isTyped }
            if let (i, _) = shaping.first {
                for (input, _) in shaping { context.requests?.record(node.inputs[input]) }
                throw context.error("input \(i) ('\(node.inputs[i])') decides its output shape by its values, computed at "
                                    + "run time: LayerKit needs them at prepare")
            }
            // Float values held as float32 are read as float32; typed ones in their own type.
            let types = values.map { graph.values[$0].isTyped ? graph.values[$0].elementType : .float32 }
            var probe = known
            for (k, i) in runtime.enumerated() {
                probe[i] = ONNXTensor(name: node.inputs[i], typed: try TypedTensor(zerosOf: types[k], shape: graph.values[values[k]].shape))
            }
            func needingValues(_ failure: LayerKitError) -> LayerKitError {
                for (k, i) in runtime.enumerated() where graph.values[values[k]].isTyped { context.requests?.record(node.inputs[i]) }
                return failure
            }
            let outputs: [ONNXTensor]
            do {
                var probing = context.knowing(probe)
                probing.probing = true
                switch try exactOutputs(probing, probe) {
                case .computed(let computed): outputs = computed
                case .floatLayer, .notComputed:
                    if values.allSatisfy({ !graph.values[$0].isTyped || graph.values[$0].elementType == .float64 }) { return false }
                    throw needingValues(context.error("reads a \(types.filter(ModelGraph.holdsTyped).map(\.description).first ?? "") "
                                                      + "value computed at run time, which only its float layer could take: "
                                                      + "LayerKit needs that value at prepare"))
                }
            } catch let failure as LayerKitError {
                throw needingValues(context.naming(failure))
            }
            var positions: [Int] = [], shapes: [[Int]] = [], outputTypes: [ElementType] = [], indices: [Int] = []
            for (k, output) in node.outputs.enumerated() where !output.isEmpty {
                guard k < outputs.count, let type = ElementType(rawValue: outputs[k].dataType.rawValue) else {
                    throw context.error("has \(node.outputs.count) outputs; its kernel makes \(outputs.count)")
                }
                let shape = outputs[k].dims
                total += try ONNXFolding.checkedCount(shape, context)
                guard total <= ONNXImporter.maxModelElements else {
                    throw context.error("the model's values up to this node would hold more than "
                                        + "\(ONNXImporter.maxModelElements >> 20)M elements (2 GiB), LayerKit's limit for a model")
                }
                let index = graph.addValue(output, shape: shape, type: type)
                graph.values[index].isContainer = outputs[k].isContainer
                valueIndex[output] = index
                declaredTypes[output] = type
                (positions, shapes, outputTypes, indices) = (positions + [k], shapes + [shape], outputTypes + [type], indices + [index])
            }
            let importer = self
            let step = TypedStep(node: context.knowing(known), runtimeInputs: runtime, inputTypes: types, outputPositions: positions,
                                 plannedShapes: shapes, outputTypes: outputTypes) { context, known in
                guard case .computed(let outputs) = try importer.exactOutputs(context, known) else {
                    throw context.error("cannot be computed on these values")
                }
                return outputs
            }
            graph.steps.append(.init(name: node.name, opType: node.opType, domain: node.domain, layer: step,
                                     inputs: values, outputs: indices))
            return true
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
            // Standard ops fold and compute typed values; ai.onnx.ml ops do where they have a typed kernel.
            let computesTyped = node.isStandard || ONNXOperators.declaration(of: node)?.fold != nil
            if computesTyped, let folded = try fold(context, known) {
                for (output, tensor) in zip(node.outputs, folded) where !output.isEmpty {
                    var tensor = tensor
                    tensor.name = output
                    constants[output] = tensor
                }
                return
            }
            if computesTyped, try addTypedStep(context, known) { return }
            let key = ConvertedNodeCache.Key(position: position, constants: known)
            let converted = try layerCache.map { cache in
                try cache.converted(key, shapes: shapes) { reads in
                    var recorded = context
                    recorded.shapeReads = reads
                    return try convert(recorded)
                }
            } ?? convert(context)
            for (k, output) in node.outputs.enumerated() where !output.isEmpty && declaredTypes[output] == nil {
                declaredTypes[output] = ONNXImporter.outputType(of: context, output: k)
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
                    let read = { try context.constant(i, "input '\(input)'") }
                    // The file's initializers are the same in every plan: converted once (`layerCache`).
                    let fromFile = inputValues[input] == nil && model.graph.initializers[input] != nil
                    let constant = try fromFile ? (layerCache?.initializer(input, make: read) ?? read()) : read()
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
        // The outputs of the nodes added so far by what they compute (`SharedNodeKey`): a later node
        // computing the same reads them instead. Not while training (every node keeps its step) nor for
        // nodes that make graph outputs (each output its own value).
        var shared: [SharedNodeKey: [String]] = [:]
        let graphOutputs = Set(model.graph.outputs.map(\.name))
        func addShared(_ node: ONNXNode, at position: Int) throws {
            let key = keepsEveryNode || node.outputs.contains(where: graphOutputs.contains) ? nil
                : SharedNodeKey(node, valueIndex: valueIndex, constants: constants)
            if let key, let earlier = shared[key], zip(node.outputs, earlier).allSatisfy({ $0.isEmpty || valueIndex[$1] != nil }) {
                for (output, source) in zip(node.outputs, earlier) where !output.isEmpty {
                    valueIndex[output] = valueIndex[source]
                    declaredTypes[output] = declaredTypes[source]
                }
                return
            }
            try add(node, at: position)
            // Folded outputs are constants, which later keys compare by value already.
            if let key, node.outputs.allSatisfy({ $0.isEmpty || valueIndex[$0] != nil }) { shared[key] = node.outputs }
        }
        for (position, node) in model.graph.nodes.enumerated() {
            guard let survey else {
                try addShared(node, at: position)
                continue
            }
            let blocking = node.inputs.first(where: unreachable.contains)
            if let input = blocking ?? node.inputs.first(where: { perValue[$0] != nil }) {
                // Its shapes are unknown, but an op LayerKit lacks is named all the same.
                let known = ONNXOperators.declaration(of: node) != nil  // converted or folded
                    || (!node.isStandard && (try? registry.entry(named: node.opType)) != nil)
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
            let requested = requests?.values.count ?? 0
            do {
                try add(node, at: position)
                survey(position, graph.steps.count > steps ? .converted : .folded)
            } catch {
                // A node that needs a value at prepare runs once that value is given: planned per value.
                if let value = requests?.values.dropFirst(requested).first,
                   let source = graphInputs(feeding: value).sorted().first {
                    survey(position, .perValue(of: source))
                    for output in node.outputs where !output.isEmpty { perValue[output] = source }
                    continue
                }
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
                let tensor = typed.elementType == .string || typed.container != nil ? try Tensor(shape: typed.shape)
                    : try typed.float32Tensor()
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
        graph.fuseBatchedGemms(cache: layerCache, initializers: Set(model.graph.initializers.keys))
        graph.fuseReshapedGemms(cache: layerCache)
        graph.fuseAttention()
        graph.fuseGelus()
        graph.fuseSilus()
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
        /// A known op that needs, at prepare, a value computed from input
        /// `of`, whose values then make the plan (a survey has none).
        case perValue(of: String)
    }

    /// The outputs of `node` computed at load when every input it reads is
    /// known (`known`, per node input), nil when it must run: exactly, in
    /// the values' own types (`exactOutputs`), else by the node's own float
    /// layer on the CPU, in float32.
    private func fold(_ node: ONNXNodeContext, _ known: [ONNXTensor?]) throws -> [ONNXTensor]? {
        switch try exactOutputs(node, known) {
        case .computed(let outputs): return outputs
        case .notComputed: return nil
        case .floatLayer(let layer, let data):
            do {
                if data.contains(where: { !(ElementType(rawValue: $0.dataType.rawValue)?.isFloatingPoint ?? false) }) { return nil }
                let shapes = try layer.outputShapes(forInputShapes: data.map(\.dims))
                for shape in shapes { _ = try ONNXFolding.checkedCount(shape, node) }
                if try data.contains(where: { try $0.elementCount() == 0 }) {
                    // Nothing to compute when every output is empty too (a Relu of a zero batch).
                    if try shapes.allSatisfy({ try Tensor.elementCount(of: $0) == 0 }) {
                        return shapes.map { ONNXTensor(name: "", dims: $0, floats: []) }
                    }
                    throw node.error("a zero-size input reaches its float layer; LayerKit runs zero-size tensors only "
                                     + "through shape, element-moving and folding ops")
                }
                let tensors = try data.map { try $0.anyFloatTensor() }
                let outputs = try shapes.map { try Tensor(shape: $0) }
                try layer.evaluate(inputs: tensors, outputs: outputs)
                return outputs.map { ONNXTensor(name: "", dims: $0.shape, floats: $0.values) }
            } catch {
                throw node.naming(error)
            }
        }
    }

    /// What `exactOutputs` made of a node.
    enum ExactOutputs {
        /// Its outputs, each in its own element type.
        case computed([ONNXTensor])
        /// Only its float layer computes it (in float32), on `data`: the
        /// layer's inputs, known.
        case floatLayer(Layer, data: [ONNXTensor])
        /// Not every input it reads is known, or it is no standard op.
        case notComputed
    }

    /// The outputs of `node` on its known inputs (`known`, per node input)
    /// computed exactly, in the values' own types: `ONNXFolding` (shapes,
    /// constants, the `TypedKernels`), or the element movement of the node's
    /// layer on the elements' bits. Load-time folding and the `TypedStep`s
    /// of a run both compute nodes here.
    func exactOutputs(_ node: ONNXNodeContext, _ known: [ONNXTensor?]) throws -> ExactOutputs {
        if let folded = try ONNXFolding.outputs(of: node, constants: known) { return .computed(folded) }
        let given = node.node.inputs.indices.filter { node.has($0) }
        guard !given.isEmpty, given.allSatisfy({ known[$0] != nil }), ONNXOperators.converter(for: node.node.opType) != nil else {
            return .notComputed
        }
        let converted = try convert(node)
        let inputs = converted.inputs.filter { node.has($0) }
        // Every given input is known (checked above): the layer's inputs among them.
        let data = inputs.compactMap { i in
            converted.reshapedConstants[i].map { ONNXTensor(name: "", dims: $0.shape, floats: $0.values) } ?? known[i]
        }
        guard let layer = converted.layer else {
            // Identity, and Dropout without its mask: the input passes through.
            return node.node.outputs.filter({ !$0.isEmpty }).count == 1 ? data.first.map { .computed([$0]) } ?? .notComputed
                : .notComputed
        }
        guard let mover = layer as? ElementMovingLayer else { return .floatLayer(layer, data: data) }
        do {
            let shapes = try layer.outputShapes(forInputShapes: data.map(\.dims))
            for shape in shapes { _ = try ONNXFolding.checkedCount(shape, node) }
            // Element movement is exact for every type: it moves the elements as they are.
            let typed = try data.map { try $0.typed() }
            guard Set(typed.map(\.elementType)).count == 1 else {
                throw node.error("its inputs are \(typed.map { "\($0.elementType)" }.joined(separator: " and ")); "
                                 + "the op takes one element type")
            }
            return .computed(try ONNXImporter.move(mover, typed, outputShapes: shapes).map { ONNXTensor(name: "", typed: $0) })
        } catch {
            throw node.naming(error)
        }
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
