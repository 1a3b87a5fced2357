/// SplitMix64: a small, fast, seedable generator, so a parity run or a test
/// input is reproducible from its seed on every platform.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension Tensor {
    /// A tensor of `shape` filled uniformly from `range` by `SeededGenerator(seed:)`.
    /// Throws `invalidParameter` unless the ends and the width of `range` are finite Floats.
    public static func uniform(shape: [Int], in range: ClosedRange<Float>, seed: UInt64) throws -> Tensor {
        // Float.random(in:) traps on a range whose width overflows (e.g. -3.4e38...3.4e38).
        guard range.lowerBound.isFinite, range.upperBound.isFinite,
              (range.upperBound - range.lowerBound).isFinite else {
            throw LayerKitError.invalidParameter(
                "random range \(range.lowerBound)...\(range.upperBound): the ends and their difference must be finite")
        }
        let tensor = try Tensor(shape: shape)
        var generator = SeededGenerator(seed: seed)
        for i in 0..<tensor.count { tensor[i] = Float.random(in: range, using: &generator) }
        return tensor
    }

    /// A copy with every element rounded to the nearest fp16 value (ties to
    /// even): what a slice image holds, so the CPU reference can read it too.
    public func roundedToHalf() throws -> Tensor {
        let copy = try Tensor(shape: shape)
        for i in 0..<count { copy[i] = Float(Float16(self[i])) }
        return copy
    }
}
