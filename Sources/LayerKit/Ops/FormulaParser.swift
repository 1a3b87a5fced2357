/// Reads a formula such as `x / (1 + exp(-beta * x))` into an `Expr`.
///
/// Grammar, loosest first: comparisons (`> >= < <= == !=`), `+ -`, `* /`,
/// unary `-`, `^` (power, right-associative, so `-x^2` is `-(x^2)`), then
/// atoms: numbers (`1e-3`), `x`, names (parameters or weights), calls of the
/// known functions, and parentheses. Every error names the 1-based column.
///
/// Formulas are limited to `maxTokens` tokens and `maxNesting` levels of
/// parentheses and calls, which bounds the parser's recursion and the depth
/// of the `Expr` every later stage walks recursively (a long input is a
/// clear error, never a stack overflow).
public struct FormulaParser {
    public static let maxTokens = 1024
    public static let maxNesting = 64

    /// A formula error, with the column it points at.
    public struct Error: Swift.Error, CustomStringConvertible, Equatable {
        public let column: Int
        public let message: String
        public var description: String { "formula column \(column): \(message)" }
    }

    /// Functions by name, with their argument count and how they build an Expr.
    static let functions: [String: (arity: Int, build: @Sendable ([Expr]) -> Expr)] = {
        var table: [String: (Int, @Sendable ([Expr]) -> Expr)] = [:]
        for f in UnaryFunction.allCases where f != .neg {
            table[f.rawValue] = (1, { .unary(f, $0[0]) })
        }
        table["pow"] = (2, { .binary(.pow, $0[0], $0[1]) })
        table["min"] = (2, { .binary(.min, $0[0], $0[1]) })
        table["max"] = (2, { .binary(.max, $0[0], $0[1]) })
        table["clamp"] = (3, { .binary(.min, .binary(.max, $0[0], $0[1]), $0[2]) })
        table["where"] = (3, { .select($0[0], $0[1], $0[2]) })
        return table
    }()

    private struct Token: Equatable {
        enum Kind: Equatable { case number(Float), name(String), symbol(String), end }
        let kind: Kind
        let column: Int
    }

    private var tokens: [Token] = []
    private var position = 0
    private var nesting = 0
    /// Where each value name is first used (1-based column), for errors.
    public private(set) var firstUse: [String: Int] = [:]

    /// Parses `text`; throws `FormulaParser.Error` with a column.
    public static func parse(_ text: String) throws -> (expr: Expr, firstUse: [String: Int]) {
        var parser = FormulaParser()
        parser.tokens = try tokenize(text)
        let expr = try parser.comparison()
        guard case .end = parser.current.kind else {
            throw Error(column: parser.current.column, message: "unexpected \(parser.describeCurrent())")
        }
        return (expr, parser.firstUse)
    }

    private var current: Token { tokens[position] }

    private mutating func take(_ symbol: String) -> Bool {
        guard current.kind == .symbol(symbol) else { return false }
        position += 1
        return true
    }

    private func describeCurrent() -> String {
        switch current.kind {
        case .number(let v): "number \(Expr.literal(v))"
        case .name(let n): "'\(n)'"
        case .symbol(let s): "'\(s)'"
        case .end: "end of formula"
        }
    }

    private mutating func comparison() throws -> Expr {
        guard nesting < FormulaParser.maxNesting else {
            throw Error(column: current.column, message: "formula nests deeper than \(FormulaParser.maxNesting) levels")
        }
        nesting += 1
        defer { nesting -= 1 }
        let left = try sum()
        let operators: [(String, BinaryFunction)] = [(">=", .greaterEqual), ("<=", .lessEqual), (">", .greater),
                                                     ("<", .less), ("==", .equal), ("!=", .notEqual)]
        for (symbol, function) in operators where take(symbol) {
            return .binary(function, left, try sum())
        }
        return left
    }

    private mutating func sum() throws -> Expr {
        var left = try product()
        while true {
            if take("+") { left = .binary(.add, left, try product()) }
            else if take("-") { left = .binary(.sub, left, try product()) }
            else { return left }
        }
    }

    private mutating func product() throws -> Expr {
        var left = try unary()
        while true {
            if take("*") { left = .binary(.mul, left, try unary()) }
            else if take("/") { left = .binary(.div, left, try unary()) }
            else { return left }
        }
    }

    private mutating func unary() throws -> Expr {
        if take("-") { return .unary(.neg, try unary()) }
        if take("+") { return try unary() }
        return try power()
    }

    private mutating func power() throws -> Expr {
        let base = try atom()
        // Right-associative, and binds tighter than unary minus on its left only.
        return take("^") ? .binary(.pow, base, try unary()) : base
    }

    private mutating func atom() throws -> Expr {
        let token = current
        switch token.kind {
        case .number(let value):
            position += 1
            return .constant(value)
        case .name(let name):
            position += 1
            if take("(") { return try call(name, column: token.column) }
            if name == "x" { return .input }
            // A function's name not called is a value (ONNX Clip's `min` and `max`).
            if firstUse[name] == nil { firstUse[name] = token.column }
            return .value(name)
        case .symbol("("):
            position += 1
            let inner = try comparison()
            guard take(")") else {
                throw Error(column: current.column, message: "expected ')' to close the '(' at column \(token.column), found \(describeCurrent())")
            }
            return inner
        default:
            throw Error(column: token.column, message: "expected a number, x, a name or '(', found \(describeCurrent())")
        }
    }

    private mutating func call(_ name: String, column: Int) throws -> Expr {
        guard let function = FormulaParser.functions[name] else {
            let known = FormulaParser.functions.keys.sorted().joined(separator: ", ")
            throw Error(column: column, message: "unknown function '\(name)' (known: \(known))")
        }
        var arguments: [Expr] = []
        if !take(")") {
            repeat { arguments.append(try comparison()) } while take(",")
            guard take(")") else {
                throw Error(column: current.column, message: "expected ',' or ')' in the call of \(name) at column \(column), found \(describeCurrent())")
            }
        }
        guard arguments.count == function.arity else {
            throw Error(column: column, message: "\(name) takes \(function.arity) argument\(function.arity == 1 ? "" : "s"), got \(arguments.count)")
        }
        return function.build(arguments)
    }

    private static func tokenize(_ text: String) throws -> [Token] {
        var tokens: [Token] = []
        let characters = Array(text.unicodeScalars)
        var i = 0
        while i < characters.count {
            let c = characters[i]
            let column = i + 1
            if c == " " || c == "\t" {
                i += 1
            } else if c.properties.numericType != nil && c.isASCII || c == "." {
                var j = i
                while j < characters.count, characters[j].isASCII, characters[j].properties.numericType != nil || characters[j] == "." { j += 1 }
                if j < characters.count, characters[j] == "e" || characters[j] == "E" {
                    var k = j + 1
                    if k < characters.count, characters[k] == "+" || characters[k] == "-" { k += 1 }
                    if k < characters.count, characters[k].isASCII, characters[k].properties.numericType != nil {
                        j = k
                        while j < characters.count, characters[j].isASCII, characters[j].properties.numericType != nil { j += 1 }
                    }
                }
                let literal = String(String.UnicodeScalarView(characters[i..<j]))
                guard let value = Float(literal), value.isFinite else {
                    throw Error(column: column, message: "'\(literal)' is not a finite number")
                }
                tokens.append(Token(kind: .number(value), column: column))
                i = j
            } else if c.properties.isAlphabetic && c.isASCII || c == "_" {
                var j = i
                while j < characters.count, characters[j].isASCII,
                      characters[j].properties.isAlphabetic || characters[j].properties.numericType != nil || characters[j] == "_" { j += 1 }
                tokens.append(Token(kind: .name(String(String.UnicodeScalarView(characters[i..<j]))), column: column))
                i = j
            } else {
                let two = i + 1 < characters.count ? String(c) + String(characters[i + 1]) : ""
                if [">=", "<=", "==", "!="].contains(two) {
                    tokens.append(Token(kind: .symbol(two), column: column))
                    i += 2
                } else if "+-*/^(),<>".unicodeScalars.contains(c) {
                    tokens.append(Token(kind: .symbol(String(c)), column: column))
                    i += 1
                } else {
                    throw Error(column: column, message: "unexpected character '\(c)'")
                }
            }
        }
        tokens.append(Token(kind: .end, column: characters.count + 1))
        guard tokens.count <= maxTokens + 1 else {  // + 1: the end token
            throw Error(column: tokens[maxTokens].column, message: "formula is too long: over \(maxTokens) tokens")
        }
        return tokens
    }
}
