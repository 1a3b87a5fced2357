import Foundation
import Testing
@testable import LayerKit

// The CPU compiler's fused patterns: that the common shapes of formula take
// them (instruction counts), and that they compute what the formula says.

private func program(_ formula: Expr, scalars: [String: Float] = [:], channels: [String: [Float]] = [:]) throws
    -> CPUProgram {
    try CPUProgram(FormulaChain(stages: [.init(name: "test", formula: formula, scalars: scalars,
                                               channelValues: channels)]))
}

/// The instruction kinds of a program, as short names.
private func kinds(_ program: CPUProgram) -> [String] {
    program.instructions.map { instruction in
        switch instruction {
        case .unary(let f, _): f.rawValue
        case .binary(let f, _, _): f.rawValue
        case .select: "select"
        case .swish: "swish"
        case .affineClamp: "affineClamp"
        case .selectCompare(let f, _, _, _, _): "select(\(f.rawValue))"
        }
    }
}

/// Runs `formula` over `values` on the CPU (1x1x1xN).
private func evaluate(_ formula: Expr, _ values: [Float], scalars: [String: Float] = [:]) throws -> [Float] {
    let chain = FormulaChain(stages: [.init(name: "test", formula: formula, scalars: scalars, channelValues: [:])])
    let input = try Tensor(shape: [1, 1, 1, values.count], values: values)
    let output = try Tensor(shape: input.shape)
    try chain.evaluate(inputs: [input], outputs: [output], threadCount: 1)
    return (0..<values.count).map { output[$0] }
}

@Suite struct CPUProgramTests {
    /// The catalog ops whose formulas the fused patterns cover, and the
    /// instructions they compile to.
    @Test(arguments: [
        ("HardSigmoid", ["affineClamp"]),
        ("Clip", ["affineClamp"]),
        ("Linear", ["affineClamp"]),
        ("HardSwish", ["affineClamp", "mul"]),
        ("LeakyRelu", ["mul", "select(greaterEqual)"]),
        ("PRelu", ["mul", "select(greaterEqual)"]),
        ("ThresholdedRelu", ["select(lessEqual)"]),
        ("Relu", ["max"]), // a lone max is one pass already
        ("Swish", ["swish"]),
    ])
    func catalogOpsCompileToFusedInstructions(_ name: String, _ expected: [String]) throws {
        let definition = try #require(OpDefinition.catalog.first { $0.name == name })
        var scalars: [String: Float] = [:], channels: [String: [Float]] = [:]
        for value in definition.formula.valueNames {
            if value == "slope" { channels[value] = [0.25] } else { scalars[value] = 0.5 } // PRelu's weight
        }
        #expect(kinds(try program(definition.formula, scalars: scalars, channels: channels)) == expected)
    }

    /// A subformula read more than once is computed once: Swish's dx reads
    /// sigmoid(beta * x) three times, and compiles one sigmoid.
    @Test func repeatedSubformulasAreComputedOnce() throws {
        let definition = try #require(OpDefinition.catalog.first { $0.name == "Swish" })
        let dx = try #require(definition.formula.derivatives()[.input])
        #expect(kinds(try program(dx, scalars: ["beta": 1.5])).filter { $0 == "sigmoid" }.count == 1, "\(dx)")
    }

    /// Shared subformulas whose readers come in every order against float64:
    /// read again inside a sibling's subtree before the first reader's
    /// instruction, read by two fused clamps through a shared affine map and
    /// then once more, and read twice by one instruction.
    @Test func sharedSubformulasKeepTheFormulasMeaning() throws {
        let x = Expr.input
        let s = x.apply(.sigmoid), t = s * 2 + 1
        let formulas: [Expr] = [
            s * (x + s),
            (Expr.binary(.max, Expr.binary(.min, t, 1.5), 0.25) + Expr.binary(.min, Expr.binary(.max, t, 0.5), 2)) + s,
            (s * s + x * s) * s,
            Expr.binary(.max, t, 0) * t,
        ]
        let values: [Float] = [-6, -2.5, -1, -0.25, 0, 0.3, 1, 2.75, 8]
        for formula in formulas {
            let y = try evaluate(formula, values)
            for (v, r) in zip(values, y) {
                let expected = DoubleFormula.evaluate(formula, x: Double(v), values: [:])
                #expect(Swift.abs(Double(r) - expected) <= 1e-6 * Swift.max(1, Swift.abs(expected)),
                        "\(formula) at \(v): \(r) vs \(expected)")
            }
        }
    }

    @Test func affinePatternsInEveryOperandOrder() throws {
        let x = Expr.input, a = Expr.value("a"), b = Expr.constant(0.5)
        for formula in [a * x + b, x * a + b, b + a * x, b + x * a, Expr.binary(.max, 0, a * x + b),
                        Expr.binary(.min, x, 1).apply(.abs) * 2 + 1] {
            #expect(kinds(try program(formula, scalars: ["a": 2])).last == "affineClamp", "\(formula)")
        }
        // Nothing to fuse: a lone bound, a leaf core, a non-leaf scale.
        for formula in [Expr.binary(.max, x, 0), Expr.binary(.min, 1, x), x * x + b, x + b] {
            #expect(!kinds(try program(formula, scalars: ["a": 2])).contains("affineClamp"), "\(formula)")
        }
    }

    @Test func clampsInEitherNestingKeepTheFormulasMeaning() throws {
        let x = Expr.input, lo = Expr.value("lo"), hi = Expr.value("hi")
        let values: [Float] = [-3, -1, -0.0, 0, 0.5, 2, 7, .infinity, -.infinity, .nan]
        let lowerFirst = Expr.binary(.min, .binary(.max, x, lo), hi)
        let upperFirst = Expr.binary(.max, lo, .binary(.min, hi, x))
        for (formula, nesting) in [(lowerFirst, "lower first"), (upperFirst, "upper first")] {
            #expect(kinds(try program(formula, scalars: ["lo": 0, "hi": 1])) == ["affineClamp"])
            // lo > hi: the nesting decides (min(max(v, 1), -1) = -1, max(min(v, -1), 1) = 1).
            for (l, h) in [(Float(-1), Float(6)), (1, -1), (0, 0)] {
                let y = try evaluate(formula, values, scalars: ["lo": l, "hi": h])
                for (v, r) in zip(values, y) {
                    let expected = v.isNaN ? Float.nan
                        : formula == lowerFirst ? Swift.min(Swift.max(v, l), h) : Swift.max(Swift.min(v, h), l)
                    #expect(expected.isNaN ? r.isNaN : r == expected, "\(nesting) [\(l), \(h)] at \(v): \(r)")
                }
            }
        }
    }

    @Test func selectWithComparisonMatchesSelectOfComparison() throws {
        let x = Expr.input, t = Expr.value("t")
        let values: [Float] = [-2, -0.0, 0, 0.5, 1, 3, .infinity, -.infinity, .nan]
        for f in [BinaryFunction.greater, .greaterEqual, .less, .lessEqual, .equal, .notEqual] {
            let formula = Expr.select(.binary(f, x, t), 2 * x, -x)
            #expect(kinds(try program(formula, scalars: ["t": 0.5])) == ["mul", "neg", "select(\(f.rawValue))"])
            let y = try evaluate(formula, values, scalars: ["t": 0.5])
            for (v, r) in zip(values, y) {
                let c: Bool = switch f {
                case .greater: v > 0.5
                case .greaterEqual: v >= 0.5
                case .less: v < 0.5
                case .lessEqual: v <= 0.5
                case .equal: v == 0.5
                default: v != 0.5
                }
                let expected = c ? 2 * v : -v
                #expect(expected.isNaN ? r.isNaN : r.bitPattern == expected.bitPattern, "\(f) at \(v): \(r)")
            }
        }
    }
}
