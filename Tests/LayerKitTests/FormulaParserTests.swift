import Testing
@testable import LayerKit

struct FormulaParserTests {
    let x = Expr.input

    func parse(_ text: String) throws -> Expr { try FormulaParser.parse(text).expr }

    @Test func precedenceAndAssociativity() throws {
        #expect(try parse("1 + 2 * x") == .binary(.add, 1, .binary(.mul, 2, x)))
        #expect(try parse("1 - 2 - x") == .binary(.sub, .binary(.sub, 1, 2), x))
        #expect(try parse("x / 2 / 4") == .binary(.div, .binary(.div, x, 2), 4))
        #expect(try parse("-x^2") == .unary(.neg, .binary(.pow, x, 2)))
        #expect(try parse("2^3^x") == .binary(.pow, 2, .binary(.pow, 3, x)))
        #expect(try parse("x^-1") == .binary(.pow, x, .unary(.neg, 1)))
        #expect(try parse("(1 + x) * 2") == .binary(.mul, .binary(.add, 1, x), 2))
        #expect(try parse("x + 1 > 2 * x") == .binary(.greater, .binary(.add, x, 1), .binary(.mul, 2, x)))
        #expect(try parse("--x") == .unary(.neg, .unary(.neg, x)))
    }

    /// Fuzz finding (Fuzz formula, seed 1): `x + (` repeated 100000 times
    /// overflowed the stack of the recursive-descent parser. Deep nesting and
    /// long formulas are now clear errors with a column.
    @Test func deepOrLongFormulasAreErrorsNotCrashes() throws {
        let nested = String(repeating: "x + (", count: 100)
        let nestingError = #expect(throws: FormulaParser.Error.self) { try parse(nested) }
        #expect(nestingError?.message == "formula nests deeper than 64 levels")
        #expect(nestingError?.column == 5 * 64 + 1)
        for long in [String(repeating: "x + (", count: 100_000), String(repeating: "x + ", count: 100_000) + "x", String(repeating: "-", count: 100_000) + "x"] {
            let lengthError = #expect(throws: FormulaParser.Error.self) { try parse(long) }
            #expect(lengthError?.message == "formula is too long: over 1024 tokens")
        }
        // At the limits a formula still parses.
        #expect(try parse(String(repeating: "(", count: 63) + "x" + String(repeating: ")", count: 63)) == x)
        _ = try parse(String(repeating: "x + ", count: 511) + "x")  // 1023 tokens
        _ = try parse(String(repeating: "-", count: 1023) + "x")  // 1024 tokens
    }

    @Test func literalsNamesAndFunctions() throws {
        #expect(try parse("1e-3 * x") == .binary(.mul, .constant(1e-3), x))
        #expect(try parse(".5 + 2.") == .binary(.add, 0.5, 2))
        #expect(try parse("2.5E+2") == .constant(250))
        #expect(try parse("max(x, alpha * x)") == .binary(.max, x, .binary(.mul, .value("alpha"), x)))
        #expect(try parse("clamp(x, lo, hi)") == .binary(.min, .binary(.max, x, .value("lo")), .value("hi")))
        #expect(try parse("where(x > 0, x, alpha * (exp(x) - 1))")
                == .select(.binary(.greater, x, 0), x, .binary(.mul, .value("alpha"), .binary(.sub, .unary(.exp, x), 1))))
        #expect(try parse("x*tanh(softplus(x))") == .binary(.mul, x, .unary(.tanh, .unary(.softplus, x))))
        #expect(try FormulaParser.parse("a + b * a").firstUse == ["a": 1, "b": 5])
    }

    /// Each bad formula, the column its error points at, and a word of the message.
    static let badFormulas: [(String, Int, String)] = [
        ("x * tanhh(x)", 5, "unknown function 'tanhh'"),
        ("max(x)", 1, "max takes 2 arguments, got 1"),
        ("exp(x, 2)", 1, "exp takes 1 argument, got 2"),
        ("(x + 1", 7, "expected ')' to close the '(' at column 1"),
        ("x + 1)", 6, "unexpected ')'"),
        ("tanh(x", 7, "expected ',' or ')'"),
        ("", 1, "found end of formula"),
        ("x +", 4, "found end of formula"),
        ("1e99 * x", 1, "not a finite number"),
        ("x; } void main() {", 2, "unexpected character ';'"),
        ("x # comment", 3, "unexpected character '#'"),
        ("x 2", 3, "unexpected number 2"),
    ]

    @Test(arguments: badFormulas)
    func errorsPointAtTheColumn(formula: String, column: Int, message: String) throws {
        #expect {
            try FormulaParser.parse(formula)
        } throws: { error in
            guard let error = error as? FormulaParser.Error else { return false }
            return error.column == column && error.message.contains(message)
        }
    }

    @Test func valuesMustBeGivenExactlyWhenUsed() throws {
        #expect(throws: FormulaParser.Error(column: 10, message: "'alpha' is used but not given (a parameter or per-channel weights)")) {
            try FormulaLayer(formula: "max(x, 2*alpha*x)")
        }
        #expect(throws: FormulaParser.Error(column: 1, message: "'tanh' is used but not given (a parameter or per-channel weights); to call the function write tanh(...)")) {
            try FormulaLayer(formula: "tanh + 1")
        }
        #expect(throws: FormulaParser.Error.self) { try FormulaLayer(formula: "x", parameters: ["beta": 1]) }
        #expect(throws: FormulaParser.Error.self) { try FormulaLayer(formula: "x", weightNames: ["slope"]) }
        _ = try FormulaLayer(formula: "where(x >= 0, x, slope * x)", weightNames: ["slope"])
        _ = try FormulaLayer(formula: "max(x, alpha * x)", parameters: ["alpha": 0.1])
    }

    /// Formulas print as text that parses back to the same formula, for every catalog op.
    @Test func catalogFormulasRoundTripThroughText() throws {
        for definition in OpDefinition.catalog {
            let formulas = definition.choice.map { $0.options.map(\.formula) } ?? [definition.formula]
            for formula in formulas {
                #expect(try parse(formula.description) == formula, "\(definition.name): \(formula)")
            }
        }
    }
}
