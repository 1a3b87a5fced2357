import Foundation

/// An optimizer's algorithm and hyper-parameters, in PyTorch's terms and
/// with its defaults. The update each algorithm makes is documented on
/// `OptimizerConfiguration.Algorithm`'s cases.
public struct OptimizerConfiguration: Sendable, Equatable {
    /// The update rules, per parameter element with gradient `g`, parameter
    /// `p`, learning rate `lr` (from `schedule`) and weight decay `wd`; the
    /// raw values are the names `layerkit train --optimizer` takes.
    public enum Algorithm: String, Sendable, CaseIterable {
        /// torch.optim.SGD:
        /// `g = g + wd * p` (when wd != 0); with momentum `mu != 0`:
        /// `b = g` on a parameter's first step, else
        /// `b = mu * b + (1 - dampening) * g`; then `g = g + mu * b`
        /// (Nesterov) or `g = b`; finally `p = p - lr * g`.
        case sgd
        /// torch.optim.Adam (L2 weight decay, bias-corrected, eps outside
        /// the square root): at a parameter's step `t` (1 for its first),
        /// `g = g + wd * p` (when wd != 0),
        /// `m = m + (1 - beta1) * (g - m)` (PyTorch's lerp),
        /// `v = beta2 * v + (1 - beta2) * g^2`,
        /// `p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)`.
        case adam
        /// torch.optim.AdamW: decoupled weight decay first,
        /// `p = p * (1 - lr * wd)`, then Adam's update with no L2 term.
        case adamw
    }

    /// Which update rule.
    public var algorithm: Algorithm
    /// The base learning rate (the schedule's epoch 0).
    public var learningRate: Double
    /// SGD's momentum factor (0: plain SGD).
    public var momentum: Double
    /// SGD's dampening of the gradient in the momentum buffer.
    public var dampening: Double
    /// SGD's Nesterov momentum (needs momentum > 0 and dampening 0, as PyTorch).
    public var nesterov: Bool
    /// Adam's decay of the first moment.
    public var beta1: Double
    /// Adam's decay of the second moment.
    public var beta2: Double
    /// Adam's term added to the denominator (outside the square root).
    public var epsilon: Double
    /// L2 weight decay (SGD, Adam: added to the gradient) or decoupled
    /// weight decay (AdamW).
    public var weightDecay: Double
    /// When set, the gradients of each step are first clipped to this total
    /// L2 norm over all parameters (`GradientClipping.clip`).
    public var maxGradientNorm: Double?
    /// How the learning rate changes per epoch.
    public var schedule: LearningRateSchedule

    /// A configuration with every hyper-parameter given; PyTorch's defaults
    /// otherwise. Check it with `validate()` (an `Optimizer` does).
    public init(algorithm: Algorithm, learningRate: Double, momentum: Double = 0, dampening: Double = 0,
                nesterov: Bool = false, beta1: Double = 0.9, beta2: Double = 0.999, epsilon: Double = 1e-8,
                weightDecay: Double? = nil, maxGradientNorm: Double? = nil,
                schedule: LearningRateSchedule = .constant) {
        self.algorithm = algorithm
        self.learningRate = learningRate
        self.momentum = momentum
        self.dampening = dampening
        self.nesterov = nesterov
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.weightDecay = weightDecay ?? (algorithm == .adamw ? 0.01 : 0)
        self.maxGradientNorm = maxGradientNorm
        self.schedule = schedule
    }

    /// torch.optim.SGD's hyper-parameters (its defaults but the learning rate).
    public static func sgd(learningRate: Double, momentum: Double = 0, dampening: Double = 0, nesterov: Bool = false,
                           weightDecay: Double = 0) -> OptimizerConfiguration {
        OptimizerConfiguration(algorithm: .sgd, learningRate: learningRate, momentum: momentum, dampening: dampening,
                               nesterov: nesterov, weightDecay: weightDecay)
    }

    /// torch.optim.Adam's hyper-parameters and defaults.
    public static func adam(learningRate: Double = 1e-3, beta1: Double = 0.9, beta2: Double = 0.999,
                            epsilon: Double = 1e-8, weightDecay: Double = 0) -> OptimizerConfiguration {
        OptimizerConfiguration(algorithm: .adam, learningRate: learningRate, beta1: beta1, beta2: beta2,
                               epsilon: epsilon, weightDecay: weightDecay)
    }

    /// torch.optim.AdamW's hyper-parameters and defaults (weight decay 0.01).
    public static func adamW(learningRate: Double = 1e-3, beta1: Double = 0.9, beta2: Double = 0.999,
                             epsilon: Double = 1e-8, weightDecay: Double = 0.01) -> OptimizerConfiguration {
        OptimizerConfiguration(algorithm: .adamw, learningRate: learningRate, beta1: beta1, beta2: beta2,
                               epsilon: epsilon, weightDecay: weightDecay)
    }

    /// Throws `LayerKitError.invalidParameter` naming the first value out of
    /// range: a negative or non-finite learning rate, momentum, dampening,
    /// epsilon or weight decay, a beta outside [0, 1), Nesterov without
    /// momentum or with dampening, a max gradient norm that is not positive,
    /// or a bad schedule.
    public func validate() throws {
        func require(_ ok: Bool, _ message: String) throws {
            if !ok { throw LayerKitError.invalidParameter("\(algorithm.rawValue): \(message)") }
        }
        for (name, value) in [("learning rate", learningRate), ("momentum", momentum), ("dampening", dampening),
                              ("epsilon", epsilon), ("weight decay", weightDecay)] {
            try require(value.isFinite && value >= 0, "\(name) \(value), must be finite and >= 0")
        }
        for (name, value) in [("beta1", beta1), ("beta2", beta2)] {
            try require(value >= 0 && value < 1, "\(name) \(value), must be in [0, 1)")
        }
        try require(!nesterov || (momentum > 0 && dampening == 0), "Nesterov momentum needs momentum > 0 and dampening 0")
        if let maxGradientNorm {
            try require(maxGradientNorm.isFinite && maxGradientNorm > 0,
                        "max gradient norm \(maxGradientNorm), must be positive and finite")
        }
        try schedule.validate()
    }
}
