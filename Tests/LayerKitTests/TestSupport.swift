import LayerKit

/// `count` floats uniform in `range`, from `seed`.
func seededUniform(count: Int, in range: ClosedRange<Float>, seed: UInt64) -> [Float] {
    var rng = SeededGenerator(seed: seed)
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

/// `output = 2 * input` elementwise: the CPU side of the test-double layers.
func doubleEachElement(inputs: [Tensor], outputs: [Tensor]) {
    for (input, output) in zip(inputs, outputs) {
        for i in 0..<input.count { output[i] = 2 * input[i] }
    }
}
