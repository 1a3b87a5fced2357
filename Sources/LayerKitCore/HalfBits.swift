extension Float {
    /// The exact value of an IEEE 754 binary16 bit pattern. Every half value,
    /// subnormals included, is representable as a Float; NaNs keep their sign
    /// and payload.
    package init(halfBits bits: UInt16) {
        let sign = UInt32(bits & 0x8000) << 16
        let exponent = UInt32(bits >> 10 & 0x1F)
        let fraction = UInt32(bits & 0x3FF)
        switch exponent {
        case 0:  // zero or subnormal: fraction x 2^-24, exact in Float
            let magnitude = Float(fraction) * 0x1p-24
            self = sign == 0 ? magnitude : -magnitude
        case 0x1F:  // infinity or NaN
            self = Float(bitPattern: sign | 0x7F80_0000 | fraction << 13)
        default:  // normal: rebias the exponent from 15 to 127
            self = Float(bitPattern: sign | (exponent + 112) << 23 | fraction << 13)
        }
    }
}
