/// The small floating-point formats of ONNX (float8 E4M3FN/E4M3FNUZ/E5M2/
/// E5M2FNUZ, E8M0, float6 E2M3/E3M2, float4 E2M1) and bfloat16, decoded to
/// and encoded from Double by one rule each way: a format is its exponent
/// and mantissa widths, its bias, and which codes are NaN or infinity.
struct Minifloat: Sendable {
    let exponentBits: Int
    let mantissaBits: Int
    let bias: Int
    /// Whether the all-ones exponent is infinity/NaN as in IEEE (E5M2, bfloat16).
    let ieeeSpecials: Bool
    /// The NaN code, when the format has one that is not IEEE's: 0x7F
    /// (E4M3FN, and its negative 0xFF), or 0x80, the negative zero of
    /// the "FNUZ" formats (which have no -0).
    let nanCode: UInt32?
    /// Whether the sign bit exists (E8M0 has none).
    let signed: Bool

    var bits: Int { (signed ? 1 : 0) + exponentBits + mantissaBits }

    static let bfloat16 = Minifloat(exponentBits: 8, mantissaBits: 7, bias: 127, ieeeSpecials: true, nanCode: nil, signed: true)
    static let e4m3fn = Minifloat(exponentBits: 4, mantissaBits: 3, bias: 7, ieeeSpecials: false, nanCode: 0x7F, signed: true)
    static let e4m3fnuz = Minifloat(exponentBits: 4, mantissaBits: 3, bias: 8, ieeeSpecials: false, nanCode: 0x80, signed: true)
    static let e5m2 = Minifloat(exponentBits: 5, mantissaBits: 2, bias: 15, ieeeSpecials: true, nanCode: nil, signed: true)
    static let e5m2fnuz = Minifloat(exponentBits: 5, mantissaBits: 2, bias: 16, ieeeSpecials: false, nanCode: 0x80, signed: true)
    static let e8m0 = Minifloat(exponentBits: 8, mantissaBits: 0, bias: 127, ieeeSpecials: false, nanCode: 0xFF, signed: false)
    static let e2m3 = Minifloat(exponentBits: 2, mantissaBits: 3, bias: 1, ieeeSpecials: false, nanCode: nil, signed: true)
    static let e3m2 = Minifloat(exponentBits: 3, mantissaBits: 2, bias: 3, ieeeSpecials: false, nanCode: nil, signed: true)
    static let e2m1 = Minifloat(exponentBits: 2, mantissaBits: 1, bias: 1, ieeeSpecials: false, nanCode: nil, signed: true)

    /// The format of `type`, nil for the IEEE types and the others.
    init?(_ type: ElementType) {
        switch type {
        case .bfloat16: self = .bfloat16
        case .float8e4m3fn: self = .e4m3fn
        case .float8e4m3fnuz: self = .e4m3fnuz
        case .float8e5m2: self = .e5m2
        case .float8e5m2fnuz: self = .e5m2fnuz
        case .float8e8m0: self = .e8m0
        case .float6e2m3: self = .e2m3
        case .float6e3m2: self = .e3m2
        case .float4e2m1: self = .e2m1
        default: return nil
        }
    }

    private init(exponentBits: Int, mantissaBits: Int, bias: Int, ieeeSpecials: Bool, nanCode: UInt32?, signed: Bool) {
        (self.exponentBits, self.mantissaBits, self.bias) = (exponentBits, mantissaBits, bias)
        (self.ieeeSpecials, self.nanCode, self.signed) = (ieeeSpecials, nanCode, signed)
    }

    private var signBit: UInt32 { signed ? 1 << UInt32(exponentBits + mantissaBits) : 0 }
    private var maxExponent: Int { (1 << exponentBits) - 1 }

    /// The value of `code`.
    func decode(_ code: UInt32) -> Double {
        if let nanCode {
            if code == nanCode || (nanCode != 0x80 && signed && code == nanCode | signBit) { return .nan }
        }
        let negative = code & signBit != 0
        let exponent = Int(code >> UInt32(mantissaBits)) & maxExponent
        let mantissa = Double(code & ((1 << UInt32(mantissaBits)) - 1))
        let scale = Double(1 << mantissaBits)
        var value: Double
        if ieeeSpecials && exponent == maxExponent {
            value = mantissa == 0 ? .infinity : .nan
        } else if exponent == 0 && mantissaBits > 0 {
            value = mantissa / scale * pow2(1 - bias)
        } else {
            value = (1 + mantissa / scale) * pow2(exponent - bias)
        }
        if negative { value = -value }
        return value
    }

    /// The code nearest `value` (ties to even). With `saturate`, values past
    /// the largest finite one (infinities included, for formats without
    /// infinity) become it; without, they become infinity or NaN as the
    /// format allows (ONNX Cast's `saturate` attribute).
    func encode(_ value: Double, saturate: Bool = true) -> UInt32 {
        if value.isNaN {
            return nanCode ?? (ieeeSpecials ? UInt32(maxExponent) << UInt32(mantissaBits) | 1 << UInt32(mantissaBits - 1) : 0)
        }
        let sign: UInt32 = value.sign == .minus && signed ? signBit : 0
        let magnitude = abs(value)
        if magnitude.isInfinite || magnitude > decode(largestFiniteCode) {
            // A value just past the largest finite one may still round down to it.
            if !magnitude.isInfinite, roundedCode(magnitude) <= largestFiniteCode { return sign | roundedCode(magnitude) }
            // The FNUZ formats have no infinity: without saturate, out of range is NaN. Saturating,
            // infinity becomes the largest finite value too, as onnxruntime and the ONNX reference
            // do (ONNX Cast's table says NaN).
            if nanCode == 0x80 && !saturate { return 0x80 }
            if saturate || (!ieeeSpecials && nanCode == nil) { return sign | largestFiniteCode }
            if ieeeSpecials { return sign | UInt32(maxExponent) << UInt32(mantissaBits) }
            return (nanCode ?? 0) | sign
        }
        let code = roundedCode(magnitude)
        // The FNUZ formats have no negative zero: -0 is +0.
        return code == 0 && nanCode == 0x80 ? 0 : sign | code
    }

    private var largestFiniteCode: UInt32 {
        let all = UInt32(1) << UInt32(exponentBits + mantissaBits) - 1
        if ieeeSpecials { return UInt32(maxExponent - 1) << UInt32(mantissaBits) | (1 << UInt32(mantissaBits) - 1) }
        if let nanCode, nanCode != 0x80 { return min(all, nanCode & all) - 1 }
        return all
    }

    /// The unsigned code nearest `magnitude` (finite, > 0 or 0), ties to
    /// even; may lie past the largest finite code.
    private func roundedCode(_ magnitude: Double) -> UInt32 {
        guard magnitude > 0 else { return 0 }
        let exponent = Int(magnitude.exponent)
        guard mantissaBits > 0 else {
            // Powers of two only (E8M0): the nearer of 2^e and 2^(e+1).
            let up = magnitude / pow2(exponent) >= 1.5 ? 1 : 0
            return UInt32(max(0, min(exponent + up + bias, maxExponent)))
        }
        let m = UInt32(mantissaBits)
        let minimum = 1 - bias
        if exponent < minimum {
            // Subnormal: units of the smallest normal's last place; a count of
            // 2^m is the smallest normal's code, so the count is the code.
            return UInt32((magnitude / pow2(minimum - mantissaBits)).rounded(.toNearestOrEven))
        }
        var units = UInt32((magnitude / pow2(exponent - mantissaBits)).rounded(.toNearestOrEven))
        var stored = exponent + bias
        if units == 2 << m { units = 1 << m; stored += 1 }
        return UInt32(stored) << m | (units - (1 << m))
    }

    private func pow2(_ n: Int) -> Double { Double(sign: .plus, exponent: n, significand: 1) }
}
