import LayerKit

/// A tensor of `shape` filled uniform in [-10, 10] from a fixed SplitMix64
/// seed, so every run and machine times the same data.
func seededInput(shape: [Int], seed: UInt64 = 1) throws -> Tensor {
    let tensor = try Tensor(shape: shape)
    var state = seed
    for i in 0..<tensor.count {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        // Top 24 bits: exactly representable in Float, uniform in [0, 1).
        tensor[i] = Float(z >> 40) / Float(1 << 24) * 20 - 10
    }
    return tensor
}
