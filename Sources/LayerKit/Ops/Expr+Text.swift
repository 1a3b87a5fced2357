/// Formulas as text: `x * sigmoid(beta * x)`, with the fewest parentheses
/// that keep the meaning (for `layerkit ops`, errors and docs).
extension Expr: CustomStringConvertible {
    public var description: String { text(parentPrecedence: 0) }

    private var precedence: Int {
        switch self {
        case .binary(let f, _, _):
            switch f {
            case .add, .sub: 2
            case .mul, .div: 3
            case .greater, .greaterEqual, .less, .lessEqual, .equal, .notEqual: 1
            case .pow, .min, .max: 5
            }
        case .unary(.neg, _): 4
        case .constant(let c) where c < 0 || c.sign == .minus: 4
        default: 5
        }
    }

    private func text(parentPrecedence: Int, rightOperand: Bool = false) -> String {
        let own = precedence
        let body: String
        switch self {
        case .input: body = "x"
        case .value(let name): body = name
        case .constant(let c): body = Expr.literal(c)
        case .unary(.neg, let a): body = "-" + a.text(parentPrecedence: own + 1)
        case .unary(let f, let a): body = "\(f.rawValue)(\(a.text(parentPrecedence: 0)))"
        case .binary(let f, let a, let b):
            if let symbol = f.infixSymbol {
                // Left-associative: a right operand of equal precedence needs parentheses.
                body = a.text(parentPrecedence: own) + " \(symbol) " + b.text(parentPrecedence: own, rightOperand: true)
            } else {
                body = "\(f.rawValue)(\(a.text(parentPrecedence: 0)), \(b.text(parentPrecedence: 0)))"
            }
        case .select(let c, let a, let b):
            body = "where(\(c.text(parentPrecedence: 0)), \(a.text(parentPrecedence: 0)), \(b.text(parentPrecedence: 0)))"
        }
        let needsParentheses = own < parentPrecedence || (rightOperand && own == parentPrecedence && own < 5)
        return needsParentheses ? "(\(body))" : body
    }

    /// Shortest text that reads back as the same Float (`0.5`, `1e-05`, `inf`).
    public static func literal(_ c: Float) -> String {
        if c.isNaN { return "nan" }
        if c.isInfinite { return c < 0 ? "-inf" : "inf" }
        if c == c.rounded(), Swift.abs(c) < 1e9 { return String(Int(c)) }
        return "\(c)"
    }
}

extension BinaryFunction {
    /// The operator a formula writes for this function, if it is one.
    var infixSymbol: String? {
        switch self {
        case .add: "+"
        case .sub: "-"
        case .mul: "*"
        case .div: "/"
        case .greater: ">"
        case .greaterEqual: ">="
        case .less: "<"
        case .lessEqual: "<="
        case .equal: "=="
        case .notEqual: "!="
        case .pow, .min, .max: nil
        }
    }
}
