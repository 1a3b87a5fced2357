import Foundation
@testable import LayerKit

/// Formulas evaluated in Double, node by node with libm: the reference the
/// derivative tests difference and compare against (none of LayerKit's
/// evaluation code is used).
enum DoubleFormula {
    /// `e` at `x` with `values`; `branches`, when given, receives one number
    /// per decision the formula makes (each comparison, min/max pick, `where`
    /// condition, sign under `abs`, floor/ceil/round result, NaN-ness), so two
    /// points with equal lists lie on the same smooth piece.
    static func evaluate(_ e: Expr, x: Double, values: [String: Double], branches: UnsafeMutablePointer<[Double]>? = nil) -> Double {
        func note(_ v: Double) { branches?.pointee.append(v) }
        func eval(_ e: Expr) -> Double {
            let result: Double
            switch e {
            case .input: result = x
            case .constant(let c): result = Double(c)
            case .value(let name): result = values[name] ?? .nan
            case .unary(let f, let a):
                let a = eval(a)
                switch f {
                case .neg: result = -a
                case .abs: note(a > 0 ? 1 : a < 0 ? -1 : 0); result = Swift.abs(a)
                case .exp: result = Foundation.exp(a)
                case .log: result = Foundation.log(a)
                case .log1p: result = Foundation.log1p(a)
                case .expm1: result = Foundation.expm1(a)
                case .sqrt: result = a.squareRoot()
                case .reciprocal: result = 1 / a
                case .tanh: result = Foundation.tanh(a)
                case .sigmoid: result = a >= 0 ? 1 / (1 + Foundation.exp(-a)) : Foundation.exp(a) / (1 + Foundation.exp(a))
                case .softplus: result = Swift.max(a, 0) + Foundation.log1p(Foundation.exp(-Swift.abs(a)))
                case .erf: result = Foundation.erf(a)
                case .sin: result = Foundation.sin(a)
                case .cos: result = Foundation.cos(a)
                case .floor: result = a.rounded(.down); note(result)
                case .ceil: result = a.rounded(.up); note(result)
                case .round: result = a.rounded(.toNearestOrEven); note(result)
                case .isnan: result = a.isNaN ? 1 : 0
                case .isinf: result = a.isInfinite ? 1 : 0
                case .tan: result = Foundation.tan(a)
                case .asin: result = Foundation.asin(a)
                case .acos: result = Foundation.acos(a)
                case .atan: result = Foundation.atan(a)
                case .sinh: result = Foundation.sinh(a)
                case .cosh: result = Foundation.cosh(a)
                case .asinh: result = Foundation.asinh(a)
                case .acosh: result = Foundation.acosh(a)
                case .atanh: result = Foundation.atanh(a)
                }
            case .binary(let f, let a, let b):
                let (a, b) = (eval(a), eval(b))
                switch f {
                case .add: result = a + b
                case .sub: result = a - b
                case .mul: result = a * b
                case .div: result = a / b
                case .pow: result = Foundation.pow(a, b)
                case .min: note(a <= b ? 1 : 0); result = a.isNaN || b.isNaN ? .nan : Swift.min(a, b)
                case .max: note(a >= b ? 1 : 0); result = a.isNaN || b.isNaN ? .nan : Swift.max(a, b)
                case .greater: result = a > b ? 1 : 0; note(result)
                case .greaterEqual: result = a >= b ? 1 : 0; note(result)
                case .less: result = a < b ? 1 : 0; note(result)
                case .lessEqual: result = a <= b ? 1 : 0; note(result)
                case .equal: result = a == b ? 1 : 0; note(result)
                case .notEqual: result = a != b ? 1 : 0; note(result)
                }
            case .select(let c, let a, let b):
                let c = eval(c)
                note(c != 0 ? 1 : 0)
                result = c != 0 ? eval(a) : eval(b)
            }
            note(result.isNaN ? 1 : 0)
            return result
        }
        return eval(e)
    }

    /// The decisions `e` makes at `x` with `values` (see `evaluate`).
    static func branches(_ e: Expr, x: Double, values: [String: Double]) -> [Double] {
        var list: [Double] = []
        _ = evaluate(e, x: x, values: values, branches: &list)
        return list
    }

    /// Whether `e` is smooth in `variable` around (`x`, `values`): finite
    /// there, and the same decisions at the point and at 5e-4 and 1e-3
    /// (relative to the variable's magnitude, at least absolute) either side.
    static func isAwayFromKinks(_ e: Expr, _ variable: Expr.Variable, x: Double, values: [String: Double]) -> Bool {
        let here = branches(e, x: x, values: values)
        guard evaluate(e, x: x, values: values).isFinite else { return false }
        for step in [-1e-3, -5e-4, 5e-4, 1e-3] {
            let (movedX, moved) = shifted(variable, by: step, x: x, values: values)
            guard branches(e, x: movedX, values: moved) == here else { return false }
        }
        return true
    }

    /// The point with `variable` moved by `step` times its magnitude (at least 1).
    private static func shifted(_ variable: Expr.Variable, by step: Double, x: Double,
                                values: [String: Double]) -> (Double, [String: Double]) {
        switch variable {
        case .input:
            return (x + step * Swift.max(1, Swift.abs(x)), values)
        case .value(let name):
            var moved = values
            moved[name] = values[name, default: 0] + step * Swift.max(1, Swift.abs(values[name, default: 0]))
            return (x, moved)
        }
    }

    /// d e / d `variable` at the point by a central difference in Double,
    /// step 1e-5 relative to the variable's magnitude (at least absolute).
    static func centralDifference(_ e: Expr, _ variable: Expr.Variable, x: Double, values: [String: Double]) -> Double {
        let h = 1e-5
        let (x1, v1) = shifted(variable, by: h, x: x, values: values)
        let (x0, v0) = shifted(variable, by: -h, x: x, values: values)
        let width: Double
        switch variable {
        case .input: width = x1 - x0
        case .value(let name): width = v1[name, default: 0] - v0[name, default: 0]
        }
        return (evaluate(e, x: x1, values: v1) - evaluate(e, x: x0, values: v0)) / width
    }
}
