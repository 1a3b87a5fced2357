import Foundation

/// Updates named Float32 parameters from their gradients, step by step, as
/// torch.optim's SGD, Adam and AdamW do (`OptimizerConfiguration.Algorithm`
/// gives the formulas), with optional gradient-norm clipping and a
/// per-epoch learning-rate schedule.
///
/// The update runs on the GPU (`Shaders/optimizer.comp`, one dispatch per
/// parameter over Float32 storage buffers: the gradients uploaded and the
/// parameters read back each step; the moments kept there from step to
/// step and read back only for `exportState()`; the parameters kept there
/// too, and uploaded only when a step is given other values than the last
/// step returned) when the backend's placement policy says so
/// (`placeOptimizerStep()`: `.gpu`, or `.automatic` on a real GPU, the rule
/// it applies to layers).
/// Otherwise its CPU twin runs the same Float32 operations in the same
/// order; `placement` says which, and a CPU step on a backend that wanted
/// the GPU is announced once through the backend's notice. Both are
/// deterministic: the same inputs give the same bits. Gradient clipping is
/// a Double reduction on the host either way.
///
/// Not thread-safe: one training loop drives an optimizer.
public final class Optimizer {
    /// The hyper-parameters; change them with `reconfigure(_:)`.
    public private(set) var configuration: OptimizerConfiguration
    /// Where steps run: `.gpu`, or `.cpu(reason:)` with why not the GPU
    /// when the backend allowed it (nil reason: the CPU was asked for).
    public let placement: Placement
    /// Optimizer steps taken.
    public private(set) var stepCount = 0
    /// The schedule's epoch: 0 in the first epoch, advanced by `finishEpoch()`.
    public private(set) var epoch = 0
    /// The gradients' total L2 norm before clipping in the last step; nil
    /// when clipping is not configured.
    public private(set) var lastGradientNorm: Double?

    let gpu: GPUContext?
    var states: [String: ParameterState] = [:]
    /// The GPU step's buffers, reused while the parameter count stays the same.
    var buffers: OptimizerBuffers?
    /// The parameters (names in order, each one's offset) whose moments
    /// `buffers` hold, and that GPU steps read there, not from `states`
    /// (which has them only after `exportState()`: a step does not read
    /// them back); nil when the next GPU step copies them in from `states`.
    var stateOnDevice: PackedLayout?
    /// The packed parameters the last GPU step read back, which its
    /// `parameters` buffer still holds: a step given the same bits (the
    /// training loop hands back what the step returned) does not upload
    /// them again. A host copy, compared on the host, because reading the
    /// buffer to compare would be a download on a GPU with its own memory.
    var parametersOnDevice: [Float]?

    /// An optimizer of `configuration` (validated: throws
    /// `LayerKitError.invalidParameter` for a value out of range) stepping
    /// on `backend`'s GPU when it uses one, else on the CPU (also with no
    /// backend).
    public init(_ configuration: OptimizerConfiguration, backend: Backend? = nil) throws {
        try configuration.validate()
        self.configuration = configuration
        // The backend's one placement policy decides, as for its layers.
        placement = backend?.placeOptimizerStep() ?? .cpu(reason: nil)
        if placement.isGPU, let context = backend?.gpu {
            // Compiled now, so a shader problem shows before training starts.
            _ = try BuiltInShaders.optimizer.kernel(on: context)
            gpu = context
        } else {
            gpu = nil
        }
        if case .cpu(let reason?) = placement { backend?.announceCPU("the optimizer step", why: reason) }
    }

    /// The learning rate of the current epoch.
    public var learningRate: Double {
        configuration.schedule.learningRate(base: configuration.learningRate, epoch: epoch)
    }

    /// Changes the hyper-parameters (a resumed run's new learning rate, say),
    /// keeping the state. Throws for an invalid configuration, or another
    /// algorithm once steps were taken (its state would not fit).
    public func reconfigure(_ configuration: OptimizerConfiguration) throws {
        try configuration.validate()
        guard configuration.algorithm == self.configuration.algorithm || states.isEmpty else {
            throw LayerKitError.invalidParameter(
                "optimizer: cannot change from \(self.configuration.algorithm.rawValue) to "
                + "\(configuration.algorithm.rawValue) with state of \(states.count) parameters")
        }
        self.configuration = configuration
    }

    /// Ends an epoch: the schedule moves to the next (PyTorch's
    /// `scheduler.step()` after each epoch).
    public func finishEpoch() { epoch += 1 }

    /// One step: the new value of every parameter of `parameters` from its
    /// gradient in `gradients` (the same names and shapes), as new tensors
    /// (the given ones are not changed). Throws, changing nothing, when a
    /// gradient names no parameter or a parameter has no gradient, when
    /// shapes differ (the state's included), or when a gradient or parameter
    /// holds NaN or infinity (naming the parameter and element).
    public func step(parameters: [String: Tensor], gradients: [String: Tensor]) throws -> [String: Tensor] {
        try check(parameters: parameters, gradients: gradients)
        var gradients = gradients
        lastGradientNorm = nil
        if let maxNorm = configuration.maxGradientNorm {
            let clipped = try GradientClipping.clip(gradients, maxNorm: maxNorm)
            gradients = clipped.gradients
            lastGradientNorm = clipped.totalNorm
        }
        let names = parameters.keys.sorted()
        var offsets: [Int] = []
        var total = 0
        for name in names {
            offsets.append(total)
            total += parameters[name]!.count
        }
        let layout = PackedLayout(names: names, offsets: offsets, count: total)
        // The moments are in the GPU's buffers when the last GPU step packed the same parameters.
        let momentsOnDevice = gpu != nil && stateOnDevice == layout
        let usesFirst = configuration.algorithm != .sgd || configuration.momentum != 0
        var packed = PackedStep(count: total)
        var constants: [OptimizerConstants] = []
        for (name, offset) in zip(names, offsets) {
            let parameter = parameters[name]!
            let state = states[name]
            packed.parameters.replaceSubrange(offset..<offset + parameter.count, with: parameter.elements)
            packed.gradients.replaceSubrange(offset..<offset + parameter.count, with: gradients[name]!.elements)
            if !momentsOnDevice, let first = state?.first { packed.first.replaceSubrange(offset..<offset + first.count, with: first) }
            if !momentsOnDevice, let second = state?.second {
                packed.second.replaceSubrange(offset..<offset + second.count, with: second)
            }
            constants.append(OptimizerConstants(configuration, learningRate: learningRate, step: (state?.step ?? 0) + 1,
                                                offset: offset, count: parameter.count, firstStep: state?.first == nil))
        }
        if let gpu {
            // The buffers hold the parameters only while they hold this layout's moments (the same packing).
            let kept = momentsOnDevice && parametersOnDevice.map { kept in
                kept.elementsEqual(packed.parameters) { $0.bitPattern == $1.bitPattern }
            } == true
            parametersOnDevice = nil  // until the step has left its result there
            try runOnGPU(gpu, constants, &packed, momentsOnDevice: momentsOnDevice, parametersOnDevice: kept)
            parametersOnDevice = packed.parameters
        } else {
            packed.withBuffers { p, g, m, v in
                for c in constants where c.count > 0 { OptimizerUpdate.run(c, parameters: p, gradients: g, first: m, second: v) }
            }
        }
        var updated: [String: Tensor] = [:]
        for (name, offset) in zip(names, offsets) {
            let shape = parameters[name]!.shape
            let range = offset..<offset + parameters[name]!.count
            updated[name] = try Tensor(shape: shape, values: Array(packed.parameters[range]))
            var state = states[name] ?? ParameterState(shape: shape)
            state.shape = shape
            state.step += 1
            // On the device the moments were not read back: the arrays (made at the first step, when
            // `packed` held them) stand for their being there until `exportState()` refreshes them.
            if usesFirst, !momentsOnDevice || state.first == nil { state.first = Array(packed.first[range]) }
            if configuration.algorithm != .sgd, !momentsOnDevice || state.second == nil {
                state.second = Array(packed.second[range])
            }
            states[name] = state
        }
        if gpu != nil { stateOnDevice = layout }
        stepCount += 1
        return updated
    }

    /// The state, for a checkpoint (see `OptimizerState` for the keys).
    public func exportState() -> OptimizerState {
        readMomentsBack()
        var tensors: [String: Tensor] = [:]
        var integers = [OptimizerState.step: stepCount, OptimizerState.epoch: epoch]
        let firstName = configuration.algorithm == .sgd ? OptimizerState.momentumBuffer : OptimizerState.expAvg
        for (name, state) in states {
            integers["\(name).\(OptimizerState.step)"] = state.step
            // The shapes were checked when the values were made: these cannot throw.
            if let first = state.first { tensors["\(name).\(firstName)"] = try? Tensor(shape: state.shape, values: first) }
            if let second = state.second {
                tensors["\(name).\(OptimizerState.expAvgSq)"] = try? Tensor(shape: state.shape, values: second)
            }
        }
        return OptimizerState(algorithm: configuration.algorithm, tensors: tensors, integers: integers)
    }

    /// Replaces the state with `state` (from `exportState()`, of this
    /// optimizer's algorithm). Throws, changing nothing, for another
    /// algorithm, unknown or incomplete keys, buffers of different shapes,
    /// a missing or negative `step` or `epoch`, or any count above
    /// `TrainingCount.maximum` (named). Buffer shapes are checked
    /// against the parameters at the next step.
    public func importState(_ state: OptimizerState) throws {
        guard state.algorithm == configuration.algorithm else {
            throw LayerKitError.invalidParameter(
                "optimizer state is \(state.algorithm.rawValue)'s, this optimizer is \(configuration.algorithm.rawValue)")
        }
        guard let step = state.integers[OptimizerState.step], let epoch = state.integers[OptimizerState.epoch],
              step >= 0, epoch >= 0 else {
            throw LayerKitError.invalidParameter("optimizer state: needs integers step and epoch, at least 0")
        }
        // Each count goes on being counted: checked so that none can overflow (a file may hold 2^63 - 1).
        for (key, value) in state.integers.sorted(by: { $0.key < $1.key }) {
            try TrainingCount.check(value, key) { LayerKitError.invalidParameter("optimizer state: " + $0) }
        }
        let states = try state.parameterStates()
        (self.states, stepCount, self.epoch) = (states, step, epoch)
        stateOnDevice = nil  // the next GPU step uploads the imported moments (and the parameters)
    }

    /// The checks of `step`, before anything changes.
    private func check(parameters: [String: Tensor], gradients: [String: Tensor]) throws {
        let names = parameters.keys.sorted()
        for name in gradients.keys.sorted() where parameters[name] == nil {
            throw LayerKitError.invalidParameter(
                "optimizer: a gradient for '\(name)', which is not a parameter" + NameSuggestion.hint(for: name, among: names))
        }
        for name in names {
            let parameter = parameters[name]!
            guard let gradient = gradients[name] else {
                throw LayerKitError.invalidParameter("optimizer: no gradient for parameter '\(name)'")
            }
            guard gradient.shape == parameter.shape else {
                throw LayerKitError.shapeMismatch(
                    "optimizer: the gradient of '\(name)' is \(Tensor.describe(gradient.shape)), the parameter "
                    + "\(Tensor.describe(parameter.shape))")
            }
            if let state = states[name], state.first != nil, state.shape != parameter.shape {
                throw LayerKitError.shapeMismatch(
                    "optimizer: the state of '\(name)' is \(Tensor.describe(state.shape)), the parameter "
                    + "\(Tensor.describe(parameter.shape))")
            }
            for (what, tensor) in [("gradient", gradient), ("value", parameter)] {
                if let i = tensor.elements.firstIndex(where: { !$0.isFinite }) {
                    throw LayerKitError.invalidParameter(
                        "optimizer: the \(what) of parameter '\(name)' is \(tensor[i]) at element \(i)")
                }
            }
        }
        guard parameters.values.reduce(0, { $0 + $1.count }) <= Int(UInt32.max) else {
            throw LayerKitError.invalidParameter("optimizer: more than \(UInt32.max) parameter elements in one step")
        }
    }
}

/// Where each parameter sits in a `PackedStep`: the names in order, each
/// one's offset, and the total count.
struct PackedLayout: Equatable {
    let names: [String]
    let offsets: [Int]
    let count: Int
}

/// One step's values, every parameter's packed one after another in name
/// order: parameters, gradients and the two state buffers (zeros where a
/// parameter has no state yet).
struct PackedStep {
    var parameters: [Float]
    var gradients: [Float]
    var first: [Float]
    var second: [Float]

    init(count: Int) {
        parameters = [Float](repeating: 0, count: count)
        (gradients, first, second) = (parameters, parameters, parameters)
    }

    /// Runs `body` on the four arrays' storage (the gradients read-only).
    mutating func withBuffers(_ body: (UnsafeMutableBufferPointer<Float>, UnsafeBufferPointer<Float>,
                                       UnsafeMutableBufferPointer<Float>, UnsafeMutableBufferPointer<Float>) -> Void) {
        let g = gradients
        g.withUnsafeBufferPointer { g in
            parameters.withUnsafeMutableBufferPointer { p in
                first.withUnsafeMutableBufferPointer { m in
                    second.withUnsafeMutableBufferPointer { v in body(p, g, m, v) }
                }
            }
        }
    }
}
