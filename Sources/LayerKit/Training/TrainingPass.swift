import LayerKitONNX

/// The forward and backward passes of a model over mini-batches: the
/// graph for each batch size, the trainable parameters' current values,
/// and where every piece of work ran.
///
/// Forward, on a backend with a GPU, the steps run as one plan: values pass
/// from GPU layer to GPU layer in slice images, and only what the loss and
/// the backward pass read is downloaded. On the CPU every step runs on its
/// own (`Backend.run`) and every value is kept. Backward walks the steps in
/// reverse from the loss, asks each `DifferentiableLayer` for its gradients
/// through a `GradientRunner`, sums the gradients of values read more than
/// once, and routes the gradients of held parameters (by role) and of
/// graph constants back to initializer names. With cross-entropy after a
/// final Softmax, the loss reads the Softmax's input and the two are
/// differentiated as one (softmax minus the one-hot target), which is exact
/// and cannot overflow.
final class TrainingPass {
    let model: ONNXModel
    let registry: LayerRegistry
    let backend: Backend
    let runner: GradientRunner
    let loss: Loss
    /// The trainable initializers, sorted.
    let trainable: [String]
    /// Every trainable initializer's current value, in the file's dims.
    private(set) var parameters: [String: Tensor]
    /// The model's input, and the graphs made so far by batch size.
    private let inputName: String
    private let itemShape: [Int]
    private var graphs: [Int: PreparedGraph] = [:]
    /// The layers' GPU weight forms re-derived after GPU optimizer steps, and their index maps.
    private let weightForms = WeightForms()
    /// Incremented by every update; a graph remakes its layers when it is behind.
    private var version = 0
    /// Whether every value the forward pass makes is rounded to fp16, as
    /// the GPU's slice images store it: the fp16 twin of a GPU run on the
    /// CPU, whose distance from the plain CPU run bounds the GPU's.
    var roundsValuesToHalf = false
    /// Whether an update from an optimizer's GPU buffer re-derives the
    /// remade layers' GPU weight forms there (`WeightForms`); false,
    /// they are uploaded again by the next plan, as every update did before
    /// (the tests' control: the same bits, more bytes).
    var refreshesWeightFormsOnDevice = true
    /// The running mean and variance of each BatchNormalization that trains
    /// (by initializer name): shared by the graphs of every batch size,
    /// updated by each training forward pass, written back with the model.
    private(set) var runningStatistics: [String: Tensor] = [:]

    /// A graph with its current layers.
    private final class PreparedGraph {
        let graph: TrainingGraph
        var layers: [Layer?]
        var version: Int
        init(_ graph: TrainingGraph, version: Int) {
            self.graph = graph
            layers = graph.graph.steps.map(\.layer)
            self.version = version
        }
    }

    /// Imports `model` for its single input (a symbolic batch axis or a
    /// fixed one), resolves `selection` and checks that every step between
    /// a trainable parameter and the loss has a backward pass.
    init(model: ONNXModel, registry: LayerRegistry, backend: Backend, loss: Loss,
         selection: TrainableSelection, batchSize: Int) throws {
        let inputs = model.graph.feedInputs
        guard inputs.count == 1, let input = inputs.first, let dims = input.dims, dims.count >= 1 else {
            throw LayerKitError.invalidModel("training needs a model with one input of known rank; this one has "
                                             + "\(inputs.count) (\(inputs.map(\.name).joined(separator: ", ")))")
        }
        self.model = model
        self.registry = registry
        self.backend = backend
        self.loss = loss
        runner = GradientRunner(backend: backend)
        inputName = input.name
        itemShape = try dims.dropFirst().map { dimension in
            guard case .value(let size) = dimension, size > 0 else {
                throw LayerKitError.invalidModel("input '\(input.name)' has a symbolic dimension after the batch axis; "
                                                 + "training needs the example shape fixed")
            }
            return size
        }
        parameters = [:]
        let first = try TrainingGraph(model: model, registry: registry,
                                      inputShapes: [input.name: [batchSize] + itemShape])
        trainable = try selection.names(in: first)
        for name in trainable {
            guard let tensor = model.graph.initializers[name], tensor.dataType == .float else {
                throw LayerKitError.invalidParameter("'\(name)' cannot be trained: only FLOAT initializers can")
            }
            parameters[name] = try Tensor(shape: tensor.dims, values: tensor.floats())
        }
        // Version -1: the first run makes the training forms (BatchNormalization with batch statistics).
        let prepared = PreparedGraph(first, version: -1)
        try checkDifferentiable(prepared)
        graphs[batchSize] = prepared
    }

    /// The shape of one example's input (the model input without its batch axis).
    var exampleShape: [Int] { itemShape }

    /// Replaces trainable parameters' values (an optimizer step, a checkpoint);
    /// every graph remakes the layers that hold them before its next run.
    /// With `device`, the GPU buffer an optimizer step left the same values
    /// in, every graph remakes them now, and a remade layer takes over its
    /// predecessor's GPU weight forms, re-derived from that buffer on the
    /// device (`WeightForms`): the next forward plan uploads no weights.
    func update(_ values: [String: Tensor], device: DeviceParameters? = nil) throws {
        for (name, value) in values {
            guard let current = parameters[name], current.shape == value.shape else {
                throw LayerKitError.invalidParameter("'\(name)' is not a trainable parameter of this shape")
            }
            parameters[name] = value
        }
        version += 1
        guard refreshesWeightFormsOnDevice, let device, backend.gpu === device.context else { return }
        do {
            let commands = try device.context.makeCommandBuffer()
            var refreshed = 0
            for (batchSize, prepared) in graphs where prepared.version >= 0 {
                let previous = prepared.layers
                try remakeLayers(prepared)
                for (i, held) in prepared.graph.heldParameters.enumerated() where prepared.layers[i] !== previous[i] {
                    guard let old = previous[i], let new = prepared.layers[i] else { continue }
                    refreshed += try weightForms.refresh(from: old, to: new, trained: held.filter { values[$0.value] != nil },
                                                        step: WeightFormStep(batchSize: batchSize, step: i),
                                                        device: device, commands: commands)
                }
            }
            guard refreshed > 0 else { return }
            try commands.commit()
            try commands.waitUntilCompleted()
        } catch {
            // A layer may hold forms whose gathers did not run: every graph makes its layers anew (their next
            // plan uploads them) before its next run.
            for prepared in graphs.values { prepared.version = -1 }
            throw error
        }
    }

    /// The loss of one mini-batch and dLoss/dParameter for every trainable
    /// parameter (zero where the loss does not reach it).
    func lossAndGradients(input: Tensor, target: Tensor) throws -> (loss: Double, gradients: [String: Tensor]) {
        let prepared = try graph(batchSize: input.shape[0])
        let graph = prepared.graph.graph
        var values = try forwardValues(prepared, input: input, training: true)
        for (i, layer) in prepared.layers.enumerated() {
            guard let normalization = layer as? TrainingBatchNormalization,
                  let (mean, variance) = statisticNames(prepared.graph, i) else { continue }
            runningStatistics[mean] = try normalization.runningMean
            runningStatistics[variance] = try normalization.runningVariance
        }
        let (predictionValue, lossStep) = lossInput(prepared)
        guard let prediction = values[predictionValue] else {
            throw LayerKitError.unsupported("the model's output was not computed")
        }
        runner.currentOp = "loss"
        let result = try runner.cpu("\(loss.rawValue) loss") { try loss.evaluate(prediction: prediction, target: target) }
        let (lossValue, seed) = (result.value, result.gradient)
        var gradients = [Tensor?](repeating: nil, count: graph.values.count)
        gradients[predictionValue] = seed
        let requires = requiresGradient(prepared.graph)
        var parameterGradients: [String: Tensor] = [:]
        for i in graph.steps.indices.reversed() where i != lossStep {
            let step = graph.steps[i]
            guard let layer = prepared.layers[i], step.outputs.contains(where: { gradients[$0] != nil }) else { continue }
            let held = prepared.graph.heldParameters[i].filter { trainable.contains($0.value) }
            let needs = step.inputs.map { requires[$0] }
            guard needs.contains(true) || !held.isEmpty else { continue }
            guard let differentiable = layer as? DifferentiableLayer else {
                throw LayerKitError.unsupported("node \(step.label) has no backward pass, and it lies between a "
                                                + "trainable parameter and the loss")
            }
            runner.currentOp = step.label
            let result = try differentiable.gradients(
                of: GradientStep(inputs: step.inputs.map { values[$0]! }, outputs: step.outputs.map { values[$0]! },
                                 outputGradients: step.outputs.map { gradients[$0] }, needsInputGradients: needs,
                                 parameterRoles: Set(held.keys)),
                on: runner)
            for (k, value) in step.inputs.enumerated() where needs[k] {
                guard let gradient = result.inputs.indices.contains(k) ? result.inputs[k] : nil else { continue }
                gradients[value] = try sum(gradients[value], gradient, shape: graph.values[value].shape)
            }
            for (role, gradient) in result.parameters {
                guard let name = held[role], let shape = parameters[name]?.shape else { continue }
                parameterGradients[name] = try sum(parameterGradients[name], gradient, shape: shape)
            }
            // No earlier step reads this step's outputs: their values and gradients can go.
            for output in step.outputs where !graph.outputs.contains(output) { (values[output], gradients[output]) = (nil, nil) }
        }
        for (value, name) in prepared.graph.constantParameters where trainable.contains(name) {
            guard let gradient = gradients[value], let shape = parameters[name]?.shape else { continue }
            parameterGradients[name] = try sum(parameterGradients[name], gradient, shape: shape)
        }
        for name in trainable where parameterGradients[name] == nil {
            parameterGradients[name] = try Tensor(shape: parameters[name]!.shape)
        }
        return (lossValue, parameterGradients)
    }

    /// The model's prediction for `input` with the current parameters (the
    /// forward pass alone, as inference runs it).
    func predict(_ input: Tensor) throws -> Tensor {
        let prepared = try graph(batchSize: input.shape[0])
        let values = try forwardValues(prepared, input: input, training: false)
        guard let output = prepared.graph.graph.outputs.first, let tensor = values[output] else {
            throw LayerKitError.unsupported("the model's output was not computed")
        }
        return tensor
    }

    // MARK: - Passes

    /// The graph for `batchSize` examples, its layers up to date.
    private func graph(batchSize: Int) throws -> PreparedGraph {
        let prepared: PreparedGraph
        if let known = graphs[batchSize] {
            prepared = known
        } else {
            prepared = PreparedGraph(try TrainingGraph(model: model, registry: registry,
                                                       inputShapes: [inputName: [batchSize] + itemShape]), version: -1)
            // Graphs of other batch sizes (a last, smaller batch) are kept too; there are at most two.
            graphs[batchSize] = prepared
        }
        if prepared.version != version { try remakeLayers(prepared) }
        return prepared
    }

    /// Remakes every layer of `prepared` that holds trainable parameters
    /// with their current values, and marks it current.
    private func remakeLayers(_ prepared: PreparedGraph) throws {
        for (i, held) in prepared.graph.heldParameters.enumerated() {
            let values = held.compactMapValues { parameters[$0] }
            guard !values.isEmpty, let layer = prepared.graph.graph.steps[i].layer as? DifferentiableLayer else { continue }
            let updated = try layer.replacingParameters(values)
            if let frozen = updated as? BatchNormalization, let (mean, variance) = statisticNames(prepared.graph, i) {
                prepared.layers[i] = try trainingForm(of: frozen, step: i, in: prepared.graph, mean: mean, variance: variance)
            } else {
                prepared.layers[i] = updated
            }
        }
        prepared.version = version
    }

    /// The initializers of step `i`'s running mean and variance when it is a
    /// BatchNormalization whose scale or B trains: such a layer normalizes
    /// with batch statistics (training mode) and updates them. One whose
    /// affine parameters are frozen stays frozen (running statistics), so a
    /// fine-tune of a later layer leaves the backbone's statistics as they were.
    private func statisticNames(_ graph: TrainingGraph, _ i: Int) -> (String, String)? {
        let node = graph.nodes[i]
        guard node.opType == "BatchNormalization", node.inputs.count >= 5,
              graph.heldParameters[i].values.contains(where: trainable.contains) else { return nil }
        return (node.inputs[3], node.inputs[4])
    }

    /// Step `i`'s BatchNormalization in training mode, from the running
    /// statistics so far (the file's until a training forward pass ran).
    private func trainingForm(of layer: BatchNormalization, step i: Int, in graph: TrainingGraph,
                              mean: String, variance: String) throws -> TrainingBatchNormalization {
        let momentum = try graph.nodes[i].float("momentum") ?? 0.9
        let runningMean = runningStatistics[mean] ?? layer.mean
        let runningVariance = runningStatistics[variance] ?? layer.variance
        let current = try BatchNormalization(scale: layer.scale, bias: layer.bias, mean: runningMean,
                                             variance: runningVariance, epsilon: layer.epsilon)
        return try TrainingBatchNormalization(current, momentum: momentum)
    }

    /// Restores running statistics saved by a checkpoint (by initializer name).
    func restoreRunningStatistics(_ values: [String: Tensor]) throws {
        for (name, value) in values {
            guard let shape = runningStatistics[name]?.shape ?? model.graph.initializers[name]?.dims,
                  shape == value.shape else {
                throw LayerKitError.invalidParameter("the checkpoint's running statistic '\(name)' fits no "
                                                     + "BatchNormalization of this model")
            }
            runningStatistics[name] = value
        }
        version += 1
    }

    /// Runs every step; returns every value (nil for values no step made).
    /// Not `training`, BatchNormalization uses its running statistics and
    /// leaves them as they are (inference).
    /// On a backend with a GPU the steps run as one plan (`forwardOnOnePlan`),
    /// and only the values the loss and the backward pass read (`hostReads`)
    /// are computed values here; the others stay nil.
    private func forwardValues(_ prepared: PreparedGraph, input: Tensor, training: Bool) throws -> [Tensor?] {
        let graph = prepared.graph.graph
        var values = graph.values.map(\.constant)
        var constants: [Int: Tensor] = [:]
        for (value, name) in prepared.graph.constantParameters {
            if let parameter = parameters[name] { constants[value] = try parameter.reshaped(to: graph.values[value].shape) }
        }
        for (value, tensor) in constants { values[value] = tensor }
        guard let inputValue = graph.inputs.first, graph.values[inputValue].shape == input.shape else {
            throw LayerKitError.shapeMismatch("a mini-batch of shape \(Tensor.describe(input.shape)) for input '\(inputName)'")
        }
        values[inputValue] = input
        let layers = try prepared.layers.map { layer -> Layer? in
            guard !training, let normalization = layer as? TrainingBatchNormalization else { return layer }
            return try normalization.frozen
        }
        if runsForwardAsOnePlan(graph) {
            let read = hostReads(prepared, training: training)
            for (value, tensor) in try forwardOnOnePlan(graph, layers: layers, constants: constants, input: input, read: read) {
                values[value] = tensor
            }
            return values
        }
        for (i, step) in graph.steps.enumerated() {
            guard let layer = layers[i] else { continue }
            runner.currentOp = step.label
            let outputs = try runner.run(layer, step.inputs.map { values[$0]! }, work: "forward")
            for (value, tensor) in zip(step.outputs, outputs) {
                if roundsValuesToHalf { for k in 0..<tensor.count { tensor[k] = Float(Float16(tensor[k])) } }
                values[value] = tensor
            }
        }
        return values
    }

    /// The computed values the host reads after a forward pass: the model's
    /// outputs and, `training`, the loss's input and the inputs and outputs
    /// of every step a gradient may pass (what its `GradientStep` holds).
    /// Graph inputs and constants are on the host already.
    private func hostReads(_ prepared: PreparedGraph, training: Bool) -> [Int] {
        let graph = prepared.graph.graph
        var read = Set(graph.outputs)
        if training {
            read.insert(lossInput(prepared).value)
            let requires = requiresGradient(prepared.graph)
            for step in graph.steps where step.layer != nil && step.outputs.contains(where: { requires[$0] }) {
                read.formUnion(step.inputs + step.outputs)
            }
        }
        return read.filter { graph.values[$0].constant == nil && !graph.inputs.contains($0) }.sorted()
    }

    /// The value the loss reads, and the step it skips: cross-entropy reads
    /// a final Softmax's input (the logits), other losses the output.
    private func lossInput(_ prepared: PreparedGraph) -> (value: Int, skipped: Int?) {
        let graph = prepared.graph.graph
        let output = graph.outputs[0]
        if loss == .crossEntropy,
           let i = graph.steps.lastIndex(where: { $0.outputs.contains(output) }),
           let softmax = prepared.layers[i] as? Softmax, softmax.kind == .softmax,
           softmax.axis == graph.values[output].shape.count - 1, let logits = graph.steps[i].inputs.first {
            return (logits, i)
        }
        return (output, nil)
    }

    /// Per value: whether a trainable parameter reaches it.
    private func requiresGradient(_ graph: TrainingGraph) -> [Bool] {
        var requires = [Bool](repeating: false, count: graph.graph.values.count)
        for (value, name) in graph.constantParameters where trainable.contains(name) { requires[value] = true }
        for (i, step) in graph.graph.steps.enumerated() where step.layer != nil {
            let holds = graph.heldParameters[i].values.contains(where: trainable.contains)
            if holds || step.inputs.contains(where: { requires[$0] }) {
                for output in step.outputs { requires[output] = true }
            }
        }
        return requires
    }

    /// Throws naming the first step a gradient must pass that has no backward pass.
    private func checkDifferentiable(_ prepared: PreparedGraph) throws {
        let requires = requiresGradient(prepared.graph)
        let graph = prepared.graph.graph
        let (_, skipped) = lossInput(prepared)
        for (i, step) in graph.steps.enumerated() where i != skipped {
            guard let layer = step.layer, step.outputs.contains(where: { requires[$0] }) else { continue }
            guard layer is DifferentiableLayer else {
                let source = trainable.first { name in
                    prepared.graph.heldParameters[i].values.contains(name)
                } ?? trainable.first ?? "?"
                throw LayerKitError.unsupported("node \(step.label) has no backward pass; it lies between the "
                                                + "trainable parameters (\(TrainableSelection.list(trainable)), from "
                                                + "'\(source)') and the loss")
            }
        }
    }

    /// `existing + gradient` in a new tensor (a layer may hand the same
    /// gradient to two inputs), reshaped to `shape` (a graph constant's
    /// gradient has the value's shape, a parameter's the file's dims).
    private func sum(_ existing: Tensor?, _ gradient: Tensor, shape: [Int]) throws -> Tensor {
        let reshaped = gradient.shape == shape ? gradient : try gradient.reshaped(to: shape)
        guard let existing else { return reshaped }
        return try runner.cpu("sum of gradients") {
            let total = try Tensor(shape: shape)
            for i in 0..<total.count { total[i] = existing[i] + reshaped[i] }
            return total
        }
    }
}
