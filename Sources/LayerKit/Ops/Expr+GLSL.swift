import Foundation

/// GLSL for a formula: one vec4 expression over `x`, built only from
/// LayerKit's `lk_*` functions (Shaders/ops.glsl), GLSL operators and
/// numeric literals, so no text of a formula reaches the shader verbatim.
extension Expr {
    /// Where a shader reads a named value: a float expression (a scalar,
    /// e.g. `param(i)`) or a vec4 one (per-channel values for the texel's
    /// four channels, e.g. `weight(k)`).
    enum GLSLSlot {
        case scalar(String)
        case perChannel(String)
    }

    /// The formula as one GLSL vec4 expression over `x`. `slots` maps each
    /// value name to where the shader reads it.
    func glsl(slots: [String: GLSLSlot]) throws -> String {
        switch self {
        case .input:
            return "x"
        case .constant(let c):
            return "vec4(\(Expr.glslLiteral(c)))"
        case .value(let name):
            guard let slot = slots[name] else {
                throw LayerKitError.invalidParameter("formula uses '\(name)', which has no value")
            }
            switch slot {
            case .scalar(let source): return "vec4(\(source))"
            case .perChannel(let source): return source
            }
        case .unary(let f, let a):
            let arg = try a.glsl(slots: slots)
            switch f {
            case .neg: return "(-\(arg))"
            case .abs, .floor, .ceil: return "\(f.rawValue)(\(arg))"
            case .round: return "roundEven(\(arg))"
            case .isnan, .isinf: return "vec4(\(f.rawValue)(\(arg)))"
            default: return "lk_\(f.rawValue)(\(arg))"
            }
        case .binary(let f, let a, let b):
            let (l, r) = (try a.glsl(slots: slots), try b.glsl(slots: slots))
            switch f {
            case .add: return "(\(l) + \(r))"
            case .sub: return "(\(l) - \(r))"
            case .mul: return "(\(l) * \(r))"
            case .div: return "(\(l) / \(r))"
            case .pow, .min, .max: return "lk_\(f.rawValue)(\(l), \(r))"
            case .greater: return "vec4(greaterThan(\(l), \(r)))"
            case .greaterEqual: return "vec4(greaterThanEqual(\(l), \(r)))"
            case .less: return "vec4(lessThan(\(l), \(r)))"
            case .lessEqual: return "vec4(lessThanEqual(\(l), \(r)))"
            case .equal: return "vec4(equal(\(l), \(r)))"
            case .notEqual: return "vec4(notEqual(\(l), \(r)))"
            }
        case .select(let c, let a, let b):
            return "lk_where(\(try c.glsl(slots: slots)), \(try a.glsl(slots: slots)), \(try b.glsl(slots: slots)))"
        }
    }

    /// A GLSL float literal that is exactly `c` (9 significant digits
    /// round-trip a Float); non-finite values by their bit patterns. Zeros
    /// are the template's `lk_zero` (a push constant that is always 0, with
    /// the sign of `c`): drivers fold a literal zero (`x * 0.0` to 0,
    /// `x / 0.0` to 0, `x + 0.0` to x, `0.0 - x` to -x, lavapipe measured)
    /// even in `precise` code, which breaks IEEE results for ±0, ±inf, NaN.
    static func glslLiteral(_ c: Float) -> String {
        if c == 0 { return c.sign == .minus ? "(-lk_zero)" : "lk_zero" }
        if c.isNaN { return "uintBitsToFloat(0x7FC00000u)" }
        if c.isInfinite { return c < 0 ? "uintBitsToFloat(0xFF800000u)" : "uintBitsToFloat(0x7F800000u)" }
        var text = "\(c)"  // Swift prints the shortest round-tripping digits
        if !text.contains(".") && !text.contains("e") { text += ".0" }
        return text.replacingOccurrences(of: "e+", with: "e")
    }
}
