/// An optimizer's state as named Float32 tensors and integers, for a
/// checkpoint: importing what `Optimizer.exportState()` gave restores the
/// optimizer bit for bit (the tensors are copies of the Float32 values).
///
/// Keys: `tensors` holds `NAME.momentum_buffer` (SGD with momentum, after
/// the parameter's first step), `NAME.exp_avg` and `NAME.exp_avg_sq`
/// (Adam, AdamW) per parameter NAME, PyTorch's state names; `integers`
/// holds `step` (optimizer steps taken), `epoch` (the schedule's epoch) and
/// `NAME.step` (steps that parameter has taken: Adam's bias correction).
public struct OptimizerState: Sendable {
    /// The algorithm the state belongs to (another one cannot import it).
    public var algorithm: OptimizerConfiguration.Algorithm
    /// Per-parameter buffers, by `NAME.<state name>`.
    public var tensors: [String: Tensor]
    /// `step`, `epoch` and `NAME.step`.
    public var integers: [String: Int]

    /// Makes a state from its parts (checked when imported).
    public init(algorithm: OptimizerConfiguration.Algorithm, tensors: [String: Tensor], integers: [String: Int]) {
        self.algorithm = algorithm
        self.tensors = tensors
        self.integers = integers
    }

    /// The key suffix of SGD's momentum buffer.
    public static let momentumBuffer = "momentum_buffer"
    /// The key suffix of Adam's first moment.
    public static let expAvg = "exp_avg"
    /// The key suffix of Adam's second moment.
    public static let expAvgSq = "exp_avg_sq"
    /// The key suffix of a parameter's step count, and the key of the optimizer's.
    public static let step = "step"
    /// The key of the schedule's epoch.
    public static let epoch = "epoch"
}

/// One parameter's state inside an `Optimizer`: its steps, and SGD's
/// momentum buffer (`first`) or Adam's exp_avg (`first`) and exp_avg_sq
/// (`second`), nil until its first step makes them.
struct ParameterState {
    var shape: [Int]
    var step = 0
    var first: [Float]?
    var second: [Float]?
}

extension OptimizerState {
    /// The per-parameter states these keys describe, checked: every key
    /// known, each buffer with its companions, Adam's two buffers of one shape.
    func parameterStates() throws -> [String: ParameterState] {
        let adam = algorithm != .sgd
        let suffixes = adam ? [OptimizerState.expAvgSq, OptimizerState.expAvg] : [OptimizerState.momentumBuffer]
        var states: [String: ParameterState] = [:]
        for (key, tensor) in tensors {
            guard let suffix = suffixes.first(where: { key.hasSuffix(".\($0)") }) else {
                throw LayerKitError.invalidParameter(
                    "\(algorithm.rawValue) optimizer state: unknown tensor '\(key)' (expected NAME."
                    + suffixes.reversed().joined(separator: " or NAME.") + ")")
            }
            let name = String(key.dropLast(suffix.count + 1))
            var state = states[name] ?? ParameterState(shape: tensor.shape)
            guard state.shape == tensor.shape else {
                throw LayerKitError.shapeMismatch(
                    "\(algorithm.rawValue) optimizer state of \(name): \(key) is \(Tensor.describe(tensor.shape)), "
                    + "its other buffer \(Tensor.describe(state.shape))")
            }
            if suffix == OptimizerState.expAvgSq { state.second = tensor.values } else { state.first = tensor.values }
            states[name] = state
        }
        for (key, value) in integers where key != OptimizerState.step && key != OptimizerState.epoch {
            guard key.hasSuffix(".\(OptimizerState.step)") else {
                throw LayerKitError.invalidParameter(
                    "\(algorithm.rawValue) optimizer state: unknown integer '\(key)' (expected step, epoch or NAME.step)")
            }
            let name = String(key.dropLast(OptimizerState.step.count + 1))
            guard value >= 0, states[name] != nil || !adam else {
                throw LayerKitError.invalidParameter(
                    "\(algorithm.rawValue) optimizer state: \(key) is \(value) " + (value < 0 ? "(negative)" : "but \(name) has no buffers"))
            }
            // An SGD parameter without momentum has a step and no buffer; its shape is learnt at its next step.
            states[name, default: ParameterState(shape: [])].step = value
        }
        for (name, state) in states {
            if adam, state.first == nil || state.second == nil || integers["\(name).\(OptimizerState.step)"] == nil {
                throw LayerKitError.invalidParameter(
                    "\(algorithm.rawValue) optimizer state of \(name): needs \(name).exp_avg, \(name).exp_avg_sq and \(name).step")
            }
        }
        return states
    }
}
