import Foundation
import Testing
@testable import LayerKit

/// A formula with its values, as the derivative tests run it.
struct DerivativeCase: CustomStringConvertible {
    let name: String
    let formula: Expr
    /// Every value's scalar (per-channel ones too, for the Double checks).
    let values: [String: Float]
    let inputRange: ClosedRange<Float>
    /// The catalog op, or nil for a user formula.
    let definition: OpDefinition?
    /// The catalog op's parameters (its example, or none).
    let parameters: [String: String]

    var description: String { "\(name) \(formula)" }
    var doubleValues: [String: Double] { values.mapValues(Double.init) }
    var variables: [Expr.Variable] { [.input] + formula.valueNames.map { .value($0) } }

    /// Every catalog op with its default parameters and with its example
    /// (a required per-channel value, PRelu's slope, is 0.25).
    static let catalog: [DerivativeCase] = OpDefinition.catalog.flatMap { definition in
        var defaults: [String: Float] = [:]
        for value in definition.values { defaults[value.name] = value.defaultValue ?? 0.25 }
        var cases = [DerivativeCase(name: definition.name, formula: definition.formula, values: defaults,
                                    inputRange: definition.inputRange, definition: definition, parameters: [:])]
        if !definition.example.isEmpty {
            var values = defaults
            var formula = definition.formula
            for (key, text) in definition.example {
                if let choice = definition.choice, choice.name == key {
                    formula = choice.options.first { $0.word == text }?.formula ?? formula
                } else {
                    values[key] = Float(text)
                }
            }
            cases.append(DerivativeCase(name: "\(definition.name)(example)", formula: formula, values: values,
                                        inputRange: definition.inputRange, definition: definition,
                                        parameters: definition.example))
        }
        return cases
    }

    /// User formulas that between them use every function of the grammar
    /// (`FormulaParser.functions`) and every operator, each with a value `a`.
    static let userFormulas: [(String, Float)] = [
        ("abs(x) * a + x", 0.75), ("exp(a * x)", 0.75), ("log(x * x + a)", 0.5), ("log1p(a * x * x)", 0.75),
        ("expm1(a * x)", 0.75), ("sqrt(x * x + a)", 0.5), ("reciprocal(x + a)", 5), ("tanh(a * x)", 0.75),
        ("sigmoid(a * x)", 0.75), ("softplus(a * x)", 0.75), ("erf(a * x)", 0.75), ("sin(a * x)", 0.75),
        ("cos(a * x)", 0.75), ("floor(x) * a + x", 0.75), ("ceil(x) * a * x", 0.75), ("round(x) + a * x", 0.75),
        ("isnan(x) + a * x * x", 0.75), ("isinf(x) * a + x / a", 0.75), ("pow(x * x + 1, a)", 0.75),
        ("x ^ 3 * a", 0.75), ("pow(a, x)", 1.5), ("pow(x, a)", 2.5), ("min(x, a * x)", 0.5), ("max(x * x, a)", 0.75),
        ("clamp(x, -a, a)", 1), ("where(x > a, x * x, a * x)", 0.5), ("(x >= a) * x + (x < a) * x * x", 0.5),
        ("(x <= a) * sin(x) + (x == a) + (x != a) * a", 0.5), ("-x * a / (1 + x * x)", 0.75), ("x - a * x * x", 0.75),
        ("tan(a * x)", 0.4), ("asin(a * x)", 0.3), ("acos(a * x)", 0.3), ("atan(a * x)", 0.75), ("sinh(a * x)", 0.75),
        ("cosh(a * x)", 0.75), ("asinh(a * x)", 0.75), ("acosh(x * x + a)", 1.5), ("atanh(a * x)", 0.3),
    ]

    static let user: [DerivativeCase] = userFormulas.map { text, a in
        // The formulas are fixed and valid: a parse error is a test failure below.
        let formula = (try? FormulaParser.parse(text).expr) ?? .constant(.nan)
        return DerivativeCase(name: text, formula: formula, values: ["a": a], inputRange: -3...3,
                              definition: nil, parameters: [:])
    }

    /// 64 points of the input range, seeded.
    var points: [Float] { seededUniform(count: 64, in: inputRange, seed: 15) }

    /// The points where the formula is smooth in `variable`.
    func smoothPoints(_ variable: Expr.Variable, from points: [Float]? = nil) -> [Float] {
        (points ?? self.points).filter { DoubleFormula.isAwayFromKinks(formula, variable, x: Double($0), values: doubleValues) }
    }
}

/// Derivatives of every formula against float64 central differences of the
/// forward formula, and the float32 CPU program of each derivative against
/// its Double evaluation.
struct FormulaDerivativeTests {
    @Test func theUserFormulasUseEveryFunctionOfTheGrammar() throws {
        var used: Set<String> = []
        for (text, _) in DerivativeCase.userFormulas {
            _ = try FormulaParser.parse(text)
            for name in FormulaParser.functions.keys where text.contains("\(name)(") { used.insert(name) }
        }
        #expect(used == Set(FormulaParser.functions.keys))
        let formulas = DerivativeCase.user.map(\.formula)
        for f in BinaryFunction.allCases {
            #expect(formulas.contains { e in var hit = false; e.visit { if case .binary(f, _, _) = $0 { hit = true } }; return hit }, "\(f)")
        }
        #expect(formulas.contains { e in var hit = false; e.visit { if case .unary(.neg, _) = $0 { hit = true } }; return hit })
    }

    /// |derivative - central difference| <= 1e-7 + 1e-5 |central difference|
    /// at every point at least 1e-3 from a kink, for x and every value.
    @Test(arguments: [("catalog", DerivativeCase.catalog), ("user", DerivativeCase.user)])
    func derivativesMatchCentralDifferences(_ set: String, _ cases: [DerivativeCase]) throws {
        var worst = 0.0
        for test in cases {
            for variable in test.variables {
                let derivative = test.formula.derivative(withRespectTo: variable)
                let points = test.smoothPoints(variable)
                #expect(points.count >= 16, "\(test) d/d\(variable): only \(points.count) smooth points")
                for point in points {
                    let x = Double(point)
                    let expected = DoubleFormula.centralDifference(test.formula, variable, x: x, values: test.doubleValues)
                    guard expected.isFinite else { continue }
                    let actual = DoubleFormula.evaluate(derivative, x: x, values: test.doubleValues)
                    let bound = 1e-7 + 1e-5 * Swift.abs(expected)
                    worst = Swift.max(worst, Swift.abs(actual - expected) / bound)
                    #expect(Swift.abs(actual - expected) <= bound,
                            "\(test) d/d\(variable) = \(derivative) at x = \(x): \(actual), central difference \(expected)")
                }
            }
        }
        print("\(set) derivatives: worst error / bound \(worst)")
    }

    /// The float32 CPU program of each derivative (a one-stage chain, as the
    /// backward layers run it) against the derivative evaluated in Double at
    /// the same float inputs: within 2e-5 * max(1, |d|).
    @Test(arguments: [("catalog", DerivativeCase.catalog), ("user", DerivativeCase.user)])
    func theCPUProgramOfEachDerivativeMatchesItsDoubleEvaluation(_ set: String, _ cases: [DerivativeCase]) throws {
        var worst = 0.0
        for test in cases {
            for variable in test.variables {
                let derivative = test.formula.derivative(withRespectTo: variable)
                let points = test.smoothPoints(variable)
                let chain = FormulaChain(stages: [.init(name: "d", formula: derivative, scalars: test.values, channelValues: [:])])
                let input = try Tensor(shape: [points.count], values: points)
                let output = try Tensor(shape: [points.count])
                try chain.evaluate(inputs: [input], outputs: [output])
                for (i, point) in points.enumerated() {
                    let expected = DoubleFormula.evaluate(derivative, x: Double(point), values: test.doubleValues)
                    guard expected.isFinite else { continue }
                    let error = Swift.abs(Double(output[i]) - expected) / Swift.max(1, Swift.abs(expected))
                    worst = Swift.max(worst, error)
                    #expect(error <= 2e-5, "\(test) d/d\(variable) = \(derivative) at x = \(point): \(output[i]) vs \(expected)")
                }
            }
        }
        print("\(set) derivative CPU programs: worst error / max(1, |d|) \(worst)")
    }

    /// The conventions at kinks and ties (Expr.derivatives' doc comment).
    @Test func kinksAndTiesFollowTheStatedConventions() throws {
        func slope(_ text: String, at x: Double, _ variable: Expr.Variable = .input,
                   values: [String: Double] = [:]) throws -> Double {
            DoubleFormula.evaluate(try FormulaParser.parse(text).expr.derivative(withRespectTo: variable), x: x, values: values)
        }
        let catalog = Dictionary(uniqueKeysWithValues: OpDefinition.catalog.map { ($0.name, $0.formula) })
        let relu = try #require(catalog["Relu"])
        #expect(DoubleFormula.evaluate(relu.derivative(withRespectTo: .input), x: 0, values: [:]) == 0)
        #expect(DoubleFormula.evaluate(relu.derivative(withRespectTo: .input), x: 1e-30, values: [:]) == 1)
        #expect(try slope("abs(x)", at: 0) == 0)
        #expect(try slope("abs(x)", at: -2) == -1)
        // A tie between two expressions: the first argument takes the gradient.
        #expect(try slope("max(x, 2 * x)", at: 0) == 1)
        #expect(try slope("min(2 * x, x)", at: 0) == 2)
        // A tie with a leaf: the bound holds.
        #expect(try slope("max(0, x)", at: 0) == 0)
        #expect(try slope("clamp(x, lo, hi)", at: -1, values: ["lo": -1, "hi": 6]) == 0)
        #expect(try slope("clamp(x, lo, hi)", at: -1, .value("lo"), values: ["lo": -1, "hi": 6]) == 1)
        #expect(try slope("clamp(x, lo, hi)", at: 6, .value("hi"), values: ["lo": -1, "hi": 6]) == 1)
        // `where` takes the branch the condition picks: LeakyRelu at 0 is the x branch.
        let leaky = try #require(catalog["LeakyRelu"])
        #expect(DoubleFormula.evaluate(leaky.derivative(withRespectTo: .input), x: 0, values: ["alpha": 0.1]) == 1)
        #expect(DoubleFormula.evaluate(leaky.derivative(withRespectTo: .value("alpha")), x: 0, values: ["alpha": 0.1]) == 0)
        // Steps and tests have derivative 0.
        for text in ["floor(x)", "ceil(x)", "round(x)", "isnan(x)", "isinf(x)", "x > 1", "x == 1"] {
            #expect(try FormulaParser.parse(text).expr.derivative(withRespectTo: .input) == 0, "\(text)")
        }
        // pow's exponent: the base > 0 rule.
        #expect(try slope("pow(x, a)", at: -2, .value("a"), values: ["a": 2]) == 0)
        #expect(try slope("pow(x, a)", at: 0, .input, values: ["a": 0]) == 0)
        // A branch not taken contributes exactly 0, not NaN.
        #expect(try slope("where(x > 0, sqrt(x), 0)", at: -1) == 0)
    }

    /// The derivative trees are folded: no `* 1`, `+ 0` or `* 0` left.
    @Test func derivativesAreFolded() throws {
        let swish = try #require(OpDefinition.catalog.first { $0.name == "Swish" }).formula
        let text = swish.derivative(withRespectTo: .input).description
        #expect(text == "sigmoid(beta * x) + x * (sigmoid(beta * x) * (1 - sigmoid(beta * x))) * beta", "\(text)")
        #expect(try FormulaParser.parse("3 * x + 2").expr.derivative(withRespectTo: .input) == 3)
        #expect(try FormulaParser.parse("a * x + b").expr.derivative(withRespectTo: .value("b")) == 1)
        #expect(try FormulaParser.parse("x * x").expr.derivative(withRespectTo: .value("b")) == 0)
    }

    /// The chain rule through a chain's stages: the whole chain's dy/dx and
    /// dy/d(each stage's value) against central differences of the stages
    /// applied one after another in Double.
    @Test func chainDerivativesMatchCentralDifferencesOfTheStagesInOrder() throws {
        let chain = FormulaChain(stages: [
            .init(name: "Linear", formula: .value("scale") * .input + .value("bias"), scalars: ["scale": 2, "bias": -0.5], channelValues: [:]),
            .init(name: "Swish", formula: .input * Expr.binary(.mul, .value("beta"), .input).apply(.sigmoid),
                  scalars: ["beta": 0.5], channelValues: [:]),
            .init(name: "Tanh", formula: Expr.input.apply(.tanh), scalars: [:], channelValues: [:]),
        ])
        let composed = try chain.composed()
        #expect(Set(composed.scalars.keys) == ["s0.scale", "s0.bias", "s1.beta"])
        func forward(_ x: Double, _ values: [String: Double]) -> Double {
            chain.stages.enumerated().reduce(x) { y, stage in
                let stageValues = Dictionary(uniqueKeysWithValues: stage.element.formula.valueNames.map {
                    ($0, values[chain.composedName($0, stage: stage.offset)]!)
                })
                return DoubleFormula.evaluate(stage.element.formula, x: y, values: stageValues)
            }
        }
        let values = composed.scalars.mapValues(Double.init)
        for variable in [Expr.Variable.input, .value("s0.scale"), .value("s0.bias"), .value("s1.beta")] {
            let derivative = try chain.derivative(withRespectTo: variable).stages[0].formula
            for point in seededUniform(count: 32, in: -4...4, seed: 3) {
                let x = Double(point)
                let h = 1e-5
                let expected: Double
                if case .value(let name) = variable {
                    var up = values, down = values
                    up[name]! += h * Swift.max(1, Swift.abs(values[name]!))
                    down[name]! -= h * Swift.max(1, Swift.abs(values[name]!))
                    expected = (forward(x, up) - forward(x, down)) / (up[name]! - down[name]!)
                } else {
                    expected = (forward(x + h * Swift.max(1, Swift.abs(x)), values) - forward(x - h * Swift.max(1, Swift.abs(x)), values))
                        / (2 * h * Swift.max(1, Swift.abs(x)))
                }
                let actual = DoubleFormula.evaluate(derivative, x: x, values: values)
                #expect(Swift.abs(actual - expected) <= 1e-7 + 1e-5 * Swift.abs(expected), "d/d\(variable) at \(x)")
            }
        }
    }

    @Test func aChainTooLargeToComposeIsAClearError() throws {
        let swish = FormulaChain.Stage(name: "Swish", formula: .input * Expr.input.apply(.sigmoid), scalars: [:], channelValues: [:])
        let chain = FormulaChain(stages: Array(repeating: swish, count: 16))
        #expect { try chain.derivative(withRespectTo: .input) } throws: { error in
            "\(error)".contains("passes \(FormulaChain.maxComposedNodes) nodes") && "\(error)".contains("unfused")
        }
    }
}
