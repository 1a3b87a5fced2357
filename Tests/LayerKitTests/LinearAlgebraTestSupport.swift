import Testing
@testable import LayerKit

/// Expects `got[i]` within `relative * max(1, |expected[i]|)` of the float64
/// reference, for every i; one failure message names the worst element.
func expectClose(_ got: [Float], _ expected: [Double], relative: Double, _ what: String,
                 sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(got.count == expected.count, "\(what): \(got.count) values, \(expected.count) expected",
            sourceLocation: sourceLocation)
    var worst: (index: Int, excess: Double)? = nil
    for (i, (g, e)) in zip(got, expected).enumerated() {
        let excess = abs(Double(g) - e) / max(1, abs(e))
        if !(excess <= relative), worst.map({ excess > $0.excess }) ?? true { worst = (i, excess) }
    }
    if let worst {
        let message = "\(what): element \(worst.index) is \(got[worst.index]), expected \(expected[worst.index]) "
            + "(relative error \(worst.excess) > \(relative))"
        Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
    }
}

/// The CPU tolerance for sums of `terms` products of values in [-1, 1]:
/// 1e-5 relative up to 256 terms, growing linearly past that. Float32
/// rounding of a running sum adds about 2^-24 times the partial sum (whose
/// size grows like sqrt(terms)) at each of `terms` steps, so the error of a
/// long sum that cancels to a small result exceeds 1e-5 with no bug (measured:
/// 1.07e-5 at 600 terms, a result of 0.13).
func sumTolerance(terms: Int) -> Double { 1e-5 * max(1, Double(terms) / 256) }

/// The GPU run of `layer` on `input` (uploaded, so fp16-rounded) into an
/// image of `outputShape` (NCHW), downloaded.
func runOnGPU(_ layer: some Layer, input: Tensor, outputShape: [Int]) throws -> Tensor {
    let context = try TestGPU.get()
    let inputImage = try context.upload(input)
    let outputImage = try context.makeSliceImage(shape: outputShape)
    let commands = try context.makeCommandBuffer()
    try layer.encode(commandBuffer: commands, inputs: [inputImage], outputs: [outputImage])
    try commands.commit()
    try commands.waitUntilCompleted()
    return try context.download(outputImage)
}

/// Seeded uniform values in [-1, 1] under `shape`.
func seededTensor(_ shape: [Int], seed: UInt64) throws -> Tensor {
    try Tensor.uniform(shape: shape, in: -1...1, seed: seed)
}
