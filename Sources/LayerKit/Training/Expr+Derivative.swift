import Foundation

/// Symbolic derivatives of formulas, by reverse mode: the seed 1 flows from
/// the formula's root to its leaves, multiplied at each node by that node's
/// partial derivative with respect to the child, and the contributions
/// reaching `x` (or a named value) are summed. The result is an `Expr`
/// like any formula, so its GLSL (`Expr.glsl`) and its CPU program
/// (`CPUProgram`) are made exactly as a forward formula's are.
///
/// Conventions, where a formula is not differentiable:
/// - `where(c, a, b)` is differentiated on the branch the condition picks
///   (the condition itself has derivative 0), so at a kink the derivative is
///   the one of the branch that holds at the point: LeakyRelu's
///   `where(x >= 0, x, alpha * x)` has derivative 1 at 0.
/// - Comparisons, `floor`, `ceil`, `round`, `isnan` and `isinf` have derivative 0.
/// - `abs'(0) = 0`.
/// - `max(a, b)` and `min(a, b)` send the whole gradient to one argument: on
///   a tie (`a == b`) to the first, `a`, except that a tie between an
///   expression and a leaf (a constant or a named value) goes to the leaf:
///   the bound holds at the bound. So Relu, `max(x, 0)`, has `Relu'(0) = 0`,
///   as Clip, HardSigmoid and HardSwish have at their bounds (Clip's bound
///   `min` then gets the gradient). With NaN on either side the gradient
///   goes to `b` (the output is NaN).
/// - `pow(a, b)`: `d/da = b * pow(a, b - 1)` (0 where `b == 0`), and
///   `d/db = pow(a, b) * log(a)` where `a > 0`, else 0 (the base > 0 rule:
///   for a base <= 0 the power is not a smooth function of the exponent).
/// - The stable forms: `sigmoid' = s * (1 - s)`, `tanh' = 1 - t * t`,
///   `softplus' = sigmoid`, `log1p'(a) = 1 / (1 + a)`, `expm1' = exp`,
///   `erf'(a) = 2 / sqrt(pi) * exp(-a * a)`, `sqrt' = 0.5 / sqrt`,
///   `reciprocal' = -r * r`, `(a / b)' wrt b = -(a / b) / b`.
/// - Terms that are structurally zero are folded away (see `Expr.sum`):
///   a branch not taken contributes exactly 0, even where it is not finite.
extension Expr {
    /// What a formula can be differentiated with respect to: its input `x`,
    /// or one of its named values.
    public enum Variable: Hashable, Sendable, CustomStringConvertible {
        case input
        case value(String)

        public var description: String {
            switch self {
            case .input: "x"
            case .value(let name): name
            }
        }
    }

    /// The derivative of the formula with respect to `variable` (0 when the
    /// formula does not depend on it).
    public func derivative(withRespectTo variable: Variable) -> Expr {
        derivatives()[variable] ?? 0
    }

    /// The derivative with respect to `x` and to every value the formula
    /// depends on, from one reverse pass; a variable whose derivative folds
    /// to 0 everywhere may be absent.
    public func derivatives() -> [Variable: Expr] {
        var result: [Variable: Expr] = [:]
        backpropagate(1, into: &result)
        return result
    }

    /// Adds `adjoint` (d result / d self) times d self / d leaf to each leaf's entry.
    private func backpropagate(_ adjoint: Expr, into result: inout [Variable: Expr]) {
        if adjoint.constantValue == 0 { return }
        switch self {
        case .input:
            result[.input] = .sum(result[.input] ?? 0, adjoint)
        case .value(let name):
            result[.value(name)] = .sum(result[.value(name)] ?? 0, adjoint)
        case .constant:
            break
        case .unary(let f, let a):
            a.backpropagate(f.adjoint(adjoint, argument: a, result: self), into: &result)
        case .binary(let f, let a, let b):
            let (da, db) = f.adjoints(adjoint, a, b, result: self)
            a.backpropagate(da, into: &result)
            b.backpropagate(db, into: &result)
        case .select(let c, let a, let b):
            a.backpropagate(.choice(c, adjoint, 0), into: &result)
            b.backpropagate(.choice(c, 0, adjoint), into: &result)
        }
    }
}

extension UnaryFunction {
    /// `adjoint * f'(argument)`; `result` is `f(argument)`, reused where the
    /// derivative is a function of the result (exp, tanh, sigmoid, sqrt, reciprocal).
    func adjoint(_ adjoint: Expr, argument a: Expr, result y: Expr) -> Expr {
        let derivative: Expr
        switch self {
        case .neg: return .negation(adjoint)
        case .abs: return .choice(a > 0, adjoint, .choice(a < 0, .negation(adjoint), 0))
        case .exp: derivative = y
        case .expm1: derivative = a.apply(.exp)
        case .log: derivative = a.apply(.reciprocal)
        case .log1p: derivative = Expr.sum(1, a).apply(.reciprocal)
        case .sqrt: derivative = .quotient(0.5, y)
        case .reciprocal: derivative = .negation(.product(y, y))
        case .tanh: derivative = .difference(1, .product(y, y))
        case .sigmoid: derivative = .product(y, .difference(1, y))
        case .softplus: derivative = a.apply(.sigmoid)
        case .erf: derivative = .product(.constant(Float(2 / Double.pi.squareRoot())),
                                         Expr.negation(.product(a, a)).apply(.exp))
        case .sin: derivative = a.apply(.cos)
        case .cos: derivative = .negation(a.apply(.sin))
        case .tan: derivative = .sum(1, .product(y, y))
        case .asin: derivative = Expr.difference(1, .product(a, a)).apply(.sqrt).apply(.reciprocal)
        case .acos: derivative = .negation(Expr.difference(1, .product(a, a)).apply(.sqrt).apply(.reciprocal))
        case .atan: derivative = Expr.sum(1, .product(a, a)).apply(.reciprocal)
        case .sinh: derivative = a.apply(.cosh)
        case .cosh: derivative = a.apply(.sinh)
        case .asinh: derivative = Expr.sum(.product(a, a), 1).apply(.sqrt).apply(.reciprocal)
        case .acosh: derivative = Expr.difference(.product(a, a), 1).apply(.sqrt).apply(.reciprocal)
        case .atanh: derivative = Expr.difference(1, .product(a, a)).apply(.reciprocal)
        case .floor, .ceil, .round, .isnan, .isinf: return 0
        }
        return .product(adjoint, derivative)
    }
}

extension BinaryFunction {
    /// `(adjoint * d f/d a, adjoint * d f/d b)`; `result` is `f(a, b)`.
    func adjoints(_ adjoint: Expr, _ a: Expr, _ b: Expr, result y: Expr) -> (Expr, Expr) {
        switch self {
        case .add:
            return (adjoint, adjoint)
        case .sub:
            return (adjoint, .negation(adjoint))
        case .mul:
            return (.product(adjoint, b), .product(adjoint, a))
        case .div:
            return (.quotient(adjoint, b), .negation(.quotient(.product(adjoint, y), b)))
        case .pow:
            let base = Expr.product(b, .power(a, .difference(b, 1)))
            let da: Expr = b.constantValue != nil ? .product(adjoint, base)
                : .choice(.binary(.equal, b, 0), 0, .product(adjoint, base))
            let db = Expr.choice(a > 0, .product(adjoint, .product(y, a.apply(.log))), 0)
            return (da, db)
        case .min, .max:
            // Whether `a` takes the gradient: it is the one chosen, ties to
            // `a` unless `b` alone is a leaf (a bound holds at the bound).
            let bound = b.isLeafValue && !a.isLeafValue
            let first: Expr = self == .max ? .binary(bound ? .greater : .greaterEqual, a, b)
                : .binary(bound ? .less : .lessEqual, a, b)
            return (.choice(first, adjoint, 0), .choice(first, 0, adjoint))
        case .greater, .greaterEqual, .less, .lessEqual, .equal, .notEqual:
            return (0, 0)
        }
    }
}
