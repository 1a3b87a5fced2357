/// One activation function of ONNX's recurrent ops (RNN, GRU, LSTM), with
/// its alpha and beta: the list their `activations` attribute may name.
/// Each runs as a formula (the catalog's, where ONNX has the op), compiled
/// once into a `CPUProgram`, so a gate's activation is the same code as
/// the element-wise op of that name.
public struct RecurrentActivation: Sendable, Equatable, CustomStringConvertible {
    /// The functions the ONNX spec lists for the recurrent ops.
    public enum Function: String, CaseIterable, Sendable {
        case relu = "Relu", tanh = "Tanh", sigmoid = "Sigmoid", affine = "Affine", leakyRelu = "LeakyRelu"
        case thresholdedRelu = "ThresholdedRelu", scaledTanh = "ScaledTanh", hardSigmoid = "HardSigmoid"
        case elu = "Elu", softsign = "Softsign", softplus = "Softplus"

        /// Whether the function reads alpha, and beta.
        var takes: (alpha: Bool, beta: Bool) {
            switch self {
            case .affine, .scaledTanh, .hardSigmoid: (true, true)
            case .leakyRelu, .thresholdedRelu, .elu: (true, false)
            case .relu, .tanh, .sigmoid, .softsign, .softplus: (false, false)
            }
        }

        /// Alpha and beta when `activation_alpha`/`activation_beta` run out:
        /// onnxruntime's (the spec gives none), the ONNX ops' own defaults
        /// for LeakyRelu, HardSigmoid and Elu and 0 for the rest.
        var defaults: (alpha: Float, beta: Float) {
            switch self {
            case .leakyRelu: (0.01, 0)
            case .hardSigmoid: (0.2, 0.5)
            case .elu: (1, 0)
            default: (0, 0)
            }
        }
    }

    /// The function.
    public let function: Function
    /// Its alpha (unused by functions without one).
    public let alpha: Float
    /// Its beta (unused by functions without one).
    public let beta: Float

    /// `function` with `alpha` and `beta`, each its default when nil.
    public init(_ function: Function, alpha: Float? = nil, beta: Float? = nil) {
        self.function = function
        self.alpha = alpha ?? function.defaults.alpha
        self.beta = beta ?? function.defaults.beta
    }

    /// `Tanh`, `LeakyRelu(alpha: 0.1)`: as errors and reports show it.
    public var description: String {
        switch function.takes {
        case (true, true): "\(function.rawValue)(alpha: \(alpha), beta: \(beta))"
        case (true, false): "\(function.rawValue)(alpha: \(alpha))"
        default: function.rawValue
        }
    }

    /// The functions `names` names (case-insensitively, as onnxruntime
    /// reads them), each taking the next of `alphas` and `betas` that it
    /// uses, in order (the spec's "consumed in the order of activation
    /// functions"), its default when they run out. Throws for an unknown
    /// name, or values left over.
    public static func list(names: [String], alphas: [Float], betas: [Float], op: String) throws -> [RecurrentActivation] {
        var (nextAlpha, nextBeta) = (alphas.makeIterator(), betas.makeIterator())
        var (alphasUsed, betasUsed) = (0, 0)
        let functions = try names.map { name in
            guard let function = Function.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) else {
                throw LayerKitError.invalidParameter(
                    "\(op): activation '\(name)' is not one of \(Function.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let (takesAlpha, takesBeta) = function.takes
            let alpha = takesAlpha ? nextAlpha.next() : nil
            let beta = takesBeta ? nextBeta.next() : nil
            alphasUsed += alpha == nil ? 0 : 1
            betasUsed += beta == nil ? 0 : 1
            return RecurrentActivation(function, alpha: alpha, beta: beta)
        }
        guard alphasUsed == alphas.count, betasUsed == betas.count else {
            throw LayerKitError.invalidParameter(
                "\(op): activations \(names) use \(alphasUsed) activation_alpha and \(betasUsed) activation_beta values; "
                + "\(alphas.count) and \(betas.count) are given")
        }
        return functions
    }

    /// The function as a formula stage: the catalog's op of its name with
    /// its values bound, or the spec's formula for Affine and ScaledTanh,
    /// which ONNX no longer has as ops.
    func stage() throws -> FormulaChain.Stage {
        let x = Expr.input
        switch function {
        case .affine:
            return .init(name: function.rawValue, formula: Expr.value("alpha") * x + Expr.value("beta"),
                         scalars: ["alpha": alpha, "beta": beta], channelValues: [:])
        case .scaledTanh:
            return .init(name: function.rawValue, formula: Expr.value("alpha") * (Expr.value("beta") * x).apply(.tanh),
                         scalars: ["alpha": alpha, "beta": beta], channelValues: [:])
        default:
            let (takesAlpha, takesBeta) = function.takes
            var parameters: [String: Any] = [:]
            if takesAlpha { parameters["alpha"] = Double(alpha) }
            if takesBeta { parameters["beta"] = Double(beta) }
            return try Self.catalogStage(function.rawValue, parameters)
        }
    }

    /// The catalog op `name` with `parameters`, as one stage.
    private static func catalogStage(_ name: String, _ parameters: [String: Any]) throws -> FormulaChain.Stage {
        guard let definition = OpDefinition.catalog.first(where: { $0.name == name }) else {
            throw LayerKitError.invalidParameter("internal: '\(name)' is not in the op catalog")
        }
        return try ElementwiseLayer(definition: definition, parameters: parameters).chain.stages[0]
    }

    /// The function as a CPU program, after a clip of its input to
    /// [-clip, clip] when `clip` is given (the ops' `clip` attribute bounds
    /// the gates' inputs, before their activations).
    func program(clip: Float?) throws -> CPUProgram {
        var stages = [try stage()]
        if let clip { stages.insert(try Self.catalogStage("Clip", ["min": Double(-clip), "max": Double(clip)]), at: 0) }
        return try CPUProgram(FormulaChain(stages: stages))
    }
}
