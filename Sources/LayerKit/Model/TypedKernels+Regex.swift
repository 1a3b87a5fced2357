import Foundation
import LayerKitONNX

/// RegexFullMatch: RE2 patterns run by Foundation's NSRegularExpression
/// (ICU), whose syntax holds RE2's. What ICU takes and RE2 refuses
/// (backreferences, lookaround, atomic groups, possessive quantifiers) is
/// refused, as onnxruntime's RE2 refuses it; RE2's Python-style named
/// groups `(?P<name>...)` are read as ICU's `(?<name>...)`.
extension TypedKernels {
    /// RegexFullMatch-20: per string of X, whether `pattern` matches all of it.
    static func regexFullMatch(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["pattern"])
        let x = try input(0, inputs, node)
        guard x.elementType == .string else { throw node.error("matches strings, got \(x.elementType)") }
        let pattern = try RE2Pattern(try node.string("pattern", default: ""), node)
        let expression: NSRegularExpression
        do {
            expression = try NSRegularExpression(pattern: "\\A(?:" + pattern.icu + ")\\z")
        } catch {
            throw node.error("pattern '\(pattern.source)' is not a valid regular expression")
        }
        let matches = x.strings.map { text -> Int64 in
            let range = NSRange(text.startIndex..., in: text)
            return expression.firstMatch(in: text, options: [.anchored], range: range) == nil ? 0 : 1
        }
        return [try TypedTensor(.bool, shape: x.shape, integers: matches)]
    }
}

/// An RE2 pattern checked for what RE2 refuses, in ICU's spelling.
private struct RE2Pattern {
    let source: String
    let icu: String

    init(_ source: String, _ node: ONNXNodeContext) throws {
        self.source = source
        let characters = Array(source)
        var (icu, i, inClass) = ("", 0, false)
        func refuse(_ what: String) -> LayerKitError {
            node.error("pattern '\(source)' uses \(what), which RE2 (ONNX's regex syntax) does not have")
        }
        while i < characters.count {
            let c = characters[i], next = i + 1 < characters.count ? characters[i + 1] : nil
            if c == "\\", let next {
                if !inClass, next.isNumber, next != "0" { throw refuse("a backreference") }
                icu += String([c, next])
                i += 2
                continue
            }
            if inClass {
                // A POSIX class ([:alpha:]) as it is; else RE2 reads '[' and '&' as themselves, ICU nests and intersects sets.
                if c == "[", next == ":", let end = (i + 2..<characters.count).first(where: { characters[$0 - 1] == ":" && characters[$0] == "]" }) {
                    icu += String(characters[i...end])
                    i = end + 1
                    continue
                }
                if c == "[" || c == "&" { icu += "\\" + String(c); i += 1; continue }
                if c == "]" { inClass = false }
            } else if c == "[" {
                inClass = true
                // A ']' (or '^]') right after the '[' is a literal.
                if next == "^" { icu += "[^"; i += 2 } else { icu += "["; i += 1 }
                if i < characters.count, characters[i] == "]" { icu += "\\]"; i += 1 }
                continue
            } else if c == "(", next == "?" {
                let rest = String(characters[(i + 2)...].prefix(3))
                if rest.hasPrefix("=") || rest.hasPrefix("!") || rest.hasPrefix("<=") || rest.hasPrefix("<!") {
                    throw refuse("lookaround")
                }
                if rest.hasPrefix(">") { throw refuse("an atomic group") }
                if rest.hasPrefix("P<") { icu += "(?<"; i += 4; continue }
            } else if "*+?}".contains(c), next == "+" {
                throw refuse("a possessive quantifier")
            }
            icu.append(c)
            i += 1
        }
        self.icu = icu
    }
}
