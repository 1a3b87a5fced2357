/// A per-element formula over the input `x`, named values (scalar
/// parameters or per-channel weights) and constants: the one definition of
/// an element-wise op, from which both its GLSL body and its CPU program
/// are made. Build it with the operators and functions below, e.g. Swish:
/// `x / (1 + exp(-beta * x))` with `x = Expr.input`, `beta = Expr.value("beta")`.
public indirect enum Expr: Hashable, Sendable {
    /// The element, `x`.
    case input
    /// A literal.
    case constant(Float)
    /// A named value: a scalar parameter, or a per-channel weight when the
    /// layer was given weights of that name.
    case value(String)
    case unary(UnaryFunction, Expr)
    case binary(BinaryFunction, Expr, Expr)
    /// `where(condition, a, b)`: `a` where the condition is true (non-zero), else `b`.
    case select(Expr, Expr, Expr)

    /// The names of the values the formula uses, in first-use order.
    public var valueNames: [String] {
        var names: [String] = []
        visit { if case .value(let name) = $0, !names.contains(name) { names.append(name) } }
        return names
    }

    /// Calls `body` on every node, parents before children, left to right.
    func visit(_ body: (Expr) -> Void) {
        body(self)
        switch self {
        case .input, .constant, .value: break
        case .unary(_, let a): a.visit(body)
        case .binary(_, let a, let b): a.visit(body); b.visit(body)
        case .select(let c, let a, let b): c.visit(body); a.visit(body); b.visit(body)
        }
    }
}

/// Functions of one argument. Each is numerically stable over all floats
/// (NaN in gives NaN out) on both backends.
public enum UnaryFunction: String, CaseIterable, Sendable {
    case neg, abs, exp, log, log1p, expm1, sqrt, reciprocal
    case tanh, sigmoid, softplus, erf, sin, cos, floor, ceil
    /// Nearest integer, halves to even; `isnan` and `isinf` give 1 or 0.
    case round, isnan, isinf
    /// Trigonometric and hyperbolic functions and their inverses (radians):
    /// NaN outside their domains (asin and acos past +-1, acosh below 1,
    /// atanh past +-1, where it is +-inf), as C's.
    case tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh
}

/// Functions of two arguments. Comparisons give 1 (true) or 0 (false),
/// false when either side is NaN (except `notEqual`). `min`/`max` return
/// NaN when either side is NaN; `pow` follows C's `powf`.
public enum BinaryFunction: String, CaseIterable, Sendable {
    case add, sub, mul, div, pow, min, max
    case greater, greaterEqual, less, lessEqual, equal, notEqual
}

extension Expr: ExpressibleByFloatLiteral, ExpressibleByIntegerLiteral {
    public init(floatLiteral value: Float) { self = .constant(value) }
    public init(integerLiteral value: Int) { self = .constant(Float(value)) }
}

// MARK: - Building formulas

extension Expr {
    public static func + (a: Expr, b: Expr) -> Expr { .binary(.add, a, b) }
    public static func - (a: Expr, b: Expr) -> Expr { .binary(.sub, a, b) }
    public static func * (a: Expr, b: Expr) -> Expr { .binary(.mul, a, b) }
    public static func / (a: Expr, b: Expr) -> Expr { .binary(.div, a, b) }
    public static prefix func - (a: Expr) -> Expr { .unary(.neg, a) }
    public static func > (a: Expr, b: Expr) -> Expr { .binary(.greater, a, b) }
    public static func >= (a: Expr, b: Expr) -> Expr { .binary(.greaterEqual, a, b) }
    public static func < (a: Expr, b: Expr) -> Expr { .binary(.less, a, b) }
    public static func <= (a: Expr, b: Expr) -> Expr { .binary(.lessEqual, a, b) }

    /// `f(self)` for a unary function.
    public func apply(_ function: UnaryFunction) -> Expr { .unary(function, self) }
}
