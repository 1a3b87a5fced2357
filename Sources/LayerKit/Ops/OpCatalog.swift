// The element-wise op catalog: one declaration per op. Names, parameter
// names and defaults follow the ONNX operator spec where ONNX has the op.
// Adding an op means adding its declaration here and its reference vectors
// (Scripts/generate_op_references.py).
//
// This file deliberately imports nothing, so `exp`, `tanh`, ... below are
// the formula-building functions, not libm's.

private let x = Expr.input
private func v(_ name: String) -> Expr { .value(name) }
private func abs(_ a: Expr) -> Expr { a.apply(.abs) }
private func exp(_ a: Expr) -> Expr { a.apply(.exp) }
private func log(_ a: Expr) -> Expr { a.apply(.log) }
private func expm1(_ a: Expr) -> Expr { a.apply(.expm1) }
private func sqrt(_ a: Expr) -> Expr { a.apply(.sqrt) }
private func tanh(_ a: Expr) -> Expr { a.apply(.tanh) }
private func sigmoid(_ a: Expr) -> Expr { a.apply(.sigmoid) }
private func softplus(_ a: Expr) -> Expr { a.apply(.softplus) }
private func erf(_ a: Expr) -> Expr { a.apply(.erf) }
private func min(_ a: Expr, _ b: Expr) -> Expr { .binary(.min, a, b) }
private func max(_ a: Expr, _ b: Expr) -> Expr { .binary(.max, a, b) }
private func pow(_ a: Expr, _ b: Expr) -> Expr { .binary(.pow, a, b) }
private func round(_ a: Expr) -> Expr { a.apply(.round) }
private func floor(_ a: Expr) -> Expr { a.apply(.floor) }
private func ceil(_ a: Expr) -> Expr { a.apply(.ceil) }
private func isnan(_ a: Expr) -> Expr { a.apply(.isnan) }
private func isinf(_ a: Expr) -> Expr { a.apply(.isinf) }
private func `where`(_ c: Expr, _ a: Expr, _ b: Expr) -> Expr { .select(c, a, b) }

/// sqrt(2/pi) and 1/sqrt(2), rounded to Float.
private let sqrtTwoOverPi: Float = 0.7978845608028654
private let oneOverSqrtTwo: Float = 0.7071067811865476
/// The largest finite Float: ONNX Clip's default bounds (numeric_limits max/lowest).
private let floatMax: Float = 3.40282346638528859811704183484516925440e+38

extension OpDefinition {
    /// Every built-in element-wise op, in the order `layerkit ops` lists them.
    public static let catalog: [OpDefinition] = [
        OpDefinition("Swish", values: [.parameter("beta", 1, perChannel: true)],
                     formula: x * sigmoid(v("beta") * x), example: ["beta": "0.5"]),
        OpDefinition("Relu", formula: max(x, 0)),
        OpDefinition("LeakyRelu", values: [.parameter("alpha", 0.01)],
                     formula: `where`(x >= 0, x, v("alpha") * x), example: ["alpha": "0.2"]),
        OpDefinition("PRelu", values: [.weight("slope")],
                     formula: `where`(x >= 0, x, v("slope") * x)),
        OpDefinition("Elu", values: [.parameter("alpha", 1)],
                     formula: `where`(x > 0, x, v("alpha") * expm1(x)), example: ["alpha": "0.5"]),
        OpDefinition("Selu", values: [.parameter("alpha", 1.67326319217681884765625),
                                      .parameter("gamma", 1.05070102214813232421875)],
                     formula: v("gamma") * `where`(x > 0, x, v("alpha") * expm1(x)),
                     example: ["alpha": "1.5", "gamma": "1.1"]),
        OpDefinition("Celu", values: [.parameter("alpha", 1)],
                     formula: max(0, x) + min(0, v("alpha") * expm1(x / v("alpha"))), example: ["alpha": "2"]),
        // Written so NaN reaches the output (onnxruntime returns 0 for NaN).
        OpDefinition("ThresholdedRelu", values: [.parameter("alpha", 1)],
                     formula: `where`(x <= v("alpha"), 0, x), example: ["alpha": "0.5"]),
        OpDefinition("Sigmoid", formula: sigmoid(x)),
        OpDefinition("HardSigmoid", values: [.parameter("alpha", 0.2), .parameter("beta", 0.5)],
                     formula: max(0, min(1, v("alpha") * x + v("beta"))), example: ["alpha": "0.3", "beta": "0.4"]),
        OpDefinition("HardSwish", formula: x * max(0, min(1, .constant(1.0 / 6.0) * x + 0.5))),
        OpDefinition("Tanh", formula: tanh(x)),
        OpDefinition("Softplus", formula: softplus(x)),
        OpDefinition("Softsign", formula: x / (1 + abs(x))),
        OpDefinition("Mish", formula: x * tanh(softplus(x))),
        OpDefinition("Gelu", choice: "approximate", options: [
            ("none", 0.5 * x * (1 + erf(.constant(oneOverSqrtTwo) * x))),
            ("tanh", 0.5 * x * (1 + tanh(.constant(sqrtTwoOverPi) * (x + 0.044715 * x * x * x)))),
        ], example: ["approximate": "tanh"]),
        OpDefinition("Clip", values: [.parameter("min", -floatMax), .parameter("max", floatMax)],
                     formula: min(max(x, v("min")), v("max")), example: ["min": "-1", "max": "6"]),
        OpDefinition("Exp", formula: exp(x)),
        OpDefinition("Log", formula: log(x), inputRange: -1...10),
        OpDefinition("Abs", formula: abs(x)),
        OpDefinition("Neg", formula: -x),
        OpDefinition("Sqrt", formula: sqrt(x), inputRange: -1...10),
        // Away from 0, where 1/x leaves fp16's range.
        OpDefinition("Reciprocal", formula: x.apply(.reciprocal), inputRange: 0.1...10),
        OpDefinition("Erf", formula: erf(x)),
        OpDefinition("Sin", formula: x.apply(.sin)),
        OpDefinition("Cos", formula: x.apply(.cos)),
        // Away from odd multiples of pi/2, where tan leaves fp16's range.
        OpDefinition("Tan", formula: x.apply(.tan), inputRange: -1.4...1.4),
        OpDefinition("Asin", formula: x.apply(.asin), inputRange: -1...1),
        OpDefinition("Acos", formula: x.apply(.acos), inputRange: -1...1),
        OpDefinition("Atan", formula: x.apply(.atan)),
        // Inside |x| < 11, where sinh and cosh stay in fp16's range.
        OpDefinition("Sinh", formula: x.apply(.sinh), inputRange: -10...10),
        OpDefinition("Cosh", formula: x.apply(.cosh), inputRange: -10...10),
        OpDefinition("Asinh", formula: x.apply(.asinh)),
        OpDefinition("Acosh", formula: x.apply(.acosh), inputRange: 1...10),
        // Inside the open interval: atanh(+-1) is +-inf.
        OpDefinition("Atanh", formula: x.apply(.atanh), inputRange: -0.99...0.99),
        // 0 and NaN come out as they went in. (-1 is written as neg(1), as it reads back from text.)
        OpDefinition("Sign", formula: `where`(x > 0, 1, `where`(x < 0, -Expr.constant(1), x))),
        OpDefinition("Shrink", values: [.parameter("lambd", 0.5), .parameter("bias", 0)],
                     formula: `where`(x < -v("lambd"), x + v("bias"), `where`(x > v("lambd"), x - v("bias"), 0)),
                     example: ["lambd": "1.5", "bias": "0.5"]),
        OpDefinition("Floor", formula: floor(x)),
        OpDefinition("Ceil", formula: ceil(x)),
        OpDefinition("Round", formula: round(x)),
        // Bool results are 0/1 floats in LayerKit.
        OpDefinition("IsNaN", formula: isnan(x)),
        OpDefinition("IsInf", values: [.parameter("detect_positive", 1), .parameter("detect_negative", 1)],
                     formula: isinf(x) * `where`(x > 0, v("detect_positive"), v("detect_negative")),
                     example: ["detect_positive": "0", "detect_negative": "1"]),
        OpDefinition("Not", formula: .binary(.equal, x, 0)),
        OpDefinition("Pow", values: [.parameter("exponent", 2)], formula: pow(x, v("exponent")),
                     example: ["exponent": "0.5"]),
        OpDefinition("Linear", values: [.parameter("scale", 1, perChannel: true),
                                        .parameter("bias", 0, perChannel: true)],
                     formula: v("scale") * x + v("bias"), example: ["scale": "2", "bias": "-0.5"]),
    ]
}
