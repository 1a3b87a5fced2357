/// Making text safe to print: names, op types, domains and producers come
/// from the user's files, and a model may hold any bytes in them.
enum Printable {
    /// `text` with every control character (C0, DEL, C1: ESC, NUL, BEL,
    /// CR, newline...) written as a visible escape (`\x1B`, `\u{85}`), so
    /// nothing in a file can move the cursor, recolour or retitle the
    /// terminal, or start a line of its own.
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            if !isControl(scalar) {
                out.unicodeScalars.append(scalar)
            } else if scalar.value < 0x80 {
                out += "\\x" + hex(scalar.value, digits: 2)
            } else {
                out += "\\u{" + hex(scalar.value, digits: 2) + "}"
            }
        }
        return out
    }

    /// `text` cut to at most about `limit` characters by eliding its
    /// middle (a 30,000-stage formula quoted in an error), saying how much
    /// was left out; shorter text is returned as it is.
    static func elided(_ text: String, limit: Int = 1000) -> String {
        let count = text.count
        guard count > limit else { return text }
        let keep = limit / 2
        return "\(text.prefix(keep)) … [\(count - 2 * keep) characters elided] … \(text.suffix(keep))"
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
