import LayerKit

/// SplitMix64: a tiny seeded generator, so test inputs are the same on every
/// run and machine.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// `count` floats uniform in `range`, from `seed`.
func seededUniform(count: Int, in range: ClosedRange<Float>, seed: UInt64) -> [Float] {
    var rng = SplitMix64(seed: seed)
    return (0..<count).map { _ in Float.random(in: range, using: &rng) }
}

/// Float inputs that break naive kernels: signed zeros, subnormals, values
/// whose exp overflows or underflows, infinities and NaN.
let edgeCaseFloats: [Float] = [
    0, -0.0, 1e-30, -1e-30, .leastNonzeroMagnitude, -.leastNonzeroMagnitude,
    65504, -65504, 1e4, -1e4, .infinity, -.infinity, .nan,
    .leastNormalMagnitude / 3, -.leastNormalMagnitude / 3, .greatestFiniteMagnitude,
    -.greatestFiniteMagnitude,
]
