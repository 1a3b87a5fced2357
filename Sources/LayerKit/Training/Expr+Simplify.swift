import Foundation

/// Builders that fold what a derivative produces in bulk: sums and products
/// with 0 or 1, negations of constants, operations on two constants, and a
/// `where` whose condition is a constant or whose branches are the same.
///
/// The folding is algebraic, not IEEE: `0 * e` becomes 0 even where `e`
/// would be inf or NaN. A derivative term that is structurally zero (the
/// derivative of a branch not taken, of a constant) therefore contributes
/// exactly 0, never NaN.
extension Expr {
    /// The constant this expression is, if it is one.
    var constantValue: Float? {
        if case .constant(let c) = self { return c }
        return nil
    }

    /// `a + b`, folded.
    static func sum(_ a: Expr, _ b: Expr) -> Expr {
        if a.constantValue == 0 { return b }
        if b.constantValue == 0 { return a }
        if let p = a.constantValue, let q = b.constantValue { return .constant(p + q) }
        if case .unary(.neg, let c) = b { return difference(a, c) }
        return .binary(.add, a, b)
    }

    /// `a - b`, folded.
    static func difference(_ a: Expr, _ b: Expr) -> Expr {
        if b.constantValue == 0 { return a }
        if a.constantValue == 0 { return negation(b) }
        if let p = a.constantValue, let q = b.constantValue { return .constant(p - q) }
        return .binary(.sub, a, b)
    }

    /// `a * b`, folded (a constant factor is kept on the left).
    static func product(_ a: Expr, _ b: Expr) -> Expr {
        if a.constantValue == 0 || b.constantValue == 0 { return 0 }
        if a.constantValue == 1 { return b }
        if b.constantValue == 1 { return a }
        if a.constantValue == -1 { return negation(b) }
        if b.constantValue == -1 { return negation(a) }
        if let p = a.constantValue, let q = b.constantValue { return .constant(p * q) }
        if let (c, p, q) = a.gate { return choice(c, product(p, b), product(q, b)) }
        if let (c, p, q) = b.gate { return choice(c, product(a, p), product(a, q)) }
        if case .unary(.neg, let c) = a { return negation(product(c, b)) }
        if case .unary(.neg, let c) = b { return negation(product(a, c)) }
        return b.constantValue != nil ? .binary(.mul, b, a) : .binary(.mul, a, b)
    }

    /// `a / b`, folded.
    static func quotient(_ a: Expr, _ b: Expr) -> Expr {
        if a.constantValue == 0 { return 0 }
        if b.constantValue == 1 { return a }
        if let p = a.constantValue, let q = b.constantValue, q != 0 { return .constant(p / q) }
        if let (c, p, q) = a.gate { return choice(c, quotient(p, b), quotient(q, b)) }
        return .binary(.div, a, b)
    }

    /// `-a`, folded (`--a` is `a`).
    static func negation(_ a: Expr) -> Expr {
        if let c = a.constantValue { return .constant(-c) }
        if case .unary(.neg, let b) = a { return b }
        if let (c, p, q) = a.gate { return choice(c, negation(p), negation(q)) }
        return .unary(.neg, a)
    }

    /// `(c, p, q)` when this is `where(c, p, q)` with a branch 0: a product,
    /// quotient or negation of it moves inside, so the branch not taken stays
    /// exactly 0 (`where(x > 0, 1, 0) * (0.5 / sqrt(x))` would be NaN for x < 0).
    private var gate: (Expr, Expr, Expr)? {
        guard case .select(let c, let p, let q) = self, p.constantValue == 0 || q.constantValue == 0 else { return nil }
        return (c, p, q)
    }

    /// `pow(a, b)`, folded for the exponents 0 (`powf(a, 0)` is 1 for every
    /// `a`, NaN included) and 1.
    static func power(_ a: Expr, _ b: Expr) -> Expr {
        if b.constantValue == 0 { return 1 }
        if b.constantValue == 1 { return a }
        return .binary(.pow, a, b)
    }

    /// `where(c, a, b)`, folded: a constant condition picks its side (non-zero
    /// and NaN are true, as `lk_where` and the CPU's select read them), equal
    /// branches need no condition, and a comparison of two constants is decided.
    static func choice(_ c: Expr, _ a: Expr, _ b: Expr) -> Expr {
        if a == b { return a }
        if let value = c.constantValue { return value != 0 ? a : b }
        if case .binary(let f, let p, let q) = c, f.isComparison, let l = p.constantValue, let r = q.constantValue {
            return f.compare(l, r) ? a : b
        }
        return .select(c, a, b)
    }
}

extension BinaryFunction {
    /// The comparison on two floats, IEEE (false when either is NaN, except `notEqual`).
    func compare(_ a: Float, _ b: Float) -> Bool {
        switch self {
        case .greater: a > b
        case .greaterEqual: a >= b
        case .less: a < b
        case .lessEqual: a <= b
        case .equal: a == b
        case .notEqual: a != b
        default: false
        }
    }
}
