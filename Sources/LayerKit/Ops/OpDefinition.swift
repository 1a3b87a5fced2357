/// The one declaration of an element-wise op: its name, its parameters and
/// weights, and its formula. Both backends are made from it: the GLSL body
/// (`Expr.glsl`) and the CPU program (`CPUProgram`).
public struct OpDefinition: Sendable {
    /// A named scalar of the formula. It comes from `--param name=v` (or the
    /// default), or, if `perChannel`, from a weight blob of the same name
    /// with one value per channel, which then replaces the scalar.
    public struct Value: Sendable {
        public let name: String
        /// The default; nil when the value must be given (as a weight).
        public let defaultValue: Float?
        /// Whether per-channel weights of this name are accepted.
        public let perChannel: Bool
    }

    /// A parameter that picks one of several formulas by word, as ONNX
    /// Gelu's `approximate` = `none` | `tanh`.
    public struct Choice: Sendable {
        public let name: String
        /// The words, the first being the default, each with its formula.
        public let options: [(word: String, formula: Expr)]
    }

    /// The name ops are looked up by (case-insensitively), ONNX's where ONNX has the op.
    public let name: String
    /// Scalar and per-channel values, in the order weights are passed to `setWeightData`.
    public let values: [Value]
    /// The formula, when there is only one.
    public let formula: Expr
    /// The formula choice, when the op has one (`formula` is then its default).
    public let choice: Choice?
    /// A non-default parameter set (`layerkit parity --all` runs it too).
    public let example: [String: String]
    /// Inputs where the op is interesting and its outputs fit fp16 (what
    /// `parity --all` draws from).
    public let inputRange: ClosedRange<Float>

    /// An op with one formula.
    public init(_ name: String, values: [Value] = [], formula: Expr, example: [String: String] = [:],
                inputRange: ClosedRange<Float> = -10...10) {
        self.init(name, values, formula, nil, example, inputRange)
    }

    /// An op whose formula is chosen by a word parameter (the first option is the default).
    public init(_ name: String, values: [Value] = [], choice: String, options: [(String, Expr)],
                example: [String: String] = [:], inputRange: ClosedRange<Float> = -10...10) {
        self.init(name, values, options[0].1,
                  Choice(name: choice, options: options.map { (word: $0.0, formula: $0.1) }), example, inputRange)
    }

    private init(_ name: String, _ values: [Value], _ formula: Expr, _ choice: Choice?,
                 _ example: [String: String], _ inputRange: ClosedRange<Float>) {
        self.name = name
        self.values = values
        self.formula = formula
        self.choice = choice
        self.example = example
        self.inputRange = inputRange
    }

    /// The names of the per-channel weights, in `setWeightData` order.
    public var weightNames: [String] { values.filter(\.perChannel).map(\.name) }
}

extension OpDefinition.Value {
    /// A scalar parameter with a default, optionally also accepted per channel.
    public static func parameter(_ name: String, _ defaultValue: Float, perChannel: Bool = false) -> Self {
        Self(name: name, defaultValue: defaultValue, perChannel: perChannel)
    }

    /// A value that only comes as per-channel weights (no scalar default).
    public static func weight(_ name: String) -> Self {
        Self(name: name, defaultValue: nil, perChannel: true)
    }
}
