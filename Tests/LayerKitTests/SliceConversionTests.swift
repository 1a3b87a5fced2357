import Testing
@testable import LayerKit

/// The host conversion behind uploads and downloads, on both paths (F16C and
/// portable C), against Swift's own IEEE fp16 conversions. No GPU needed.
struct SliceConversionTests {
    /// Every finite fp16 value, the midpoints between neighbours (ties), and
    /// the floats just either side of each midpoint, both signs; plus
    /// overflow, infinities, NaN and fp32 subnormals.
    static let probes: [Float] = {
        var values: [Float] = []
        for bits in UInt16(0)..<0x7C00 {
            let low = Float(Float16(bitPattern: bits))
            let high = Float(Float16(bitPattern: bits + 1))
            let mid = (low + high) / 2  // exact in fp32
            values += [low, mid, mid.nextDown, mid.nextUp]
        }
        values += [65504, 65519.996, 65520, 65536, 1e30, .infinity, .nan,
                   .leastNonzeroMagnitude, .leastNormalMagnitude, Float.leastNormalMagnitude / 3]
        return values + values.map { -$0 }
    }()

    @Test(arguments: [false, true])
    func packRoundsEveryProbeToNearestEven(portable: Bool) throws {
        // 1 x 1 x 1 x n: one channel, so lane 0 of texel i is element i.
        let input = try Tensor(shape: [1, 1, 1, Self.probes.count], values: Self.probes)
        let lanes = try Self.pack(input, portable: portable)
        var mismatches = 0
        for (i, x) in Self.probes.enumerated() {
            let got = Float16(bitPattern: lanes[i * 4]), want = Float16(x)
            if !(got.bitPattern == want.bitPattern || (got.isNaN && want.isNaN)) {
                mismatches += 1
                if mismatches <= 5 { Issue.record("\(x): got 0x\(String(got.bitPattern, radix: 16)), want \(want)") }
            }
        }
        #expect(mismatches == 0)
        #expect((0..<Self.probes.count).allSatisfy { lanes[$0 * 4 + 1] == 0 && lanes[$0 * 4 + 3] == 0 })
    }

    @Test(arguments: [false, true])
    func unpackWidensEveryHalfExactly(portable: Bool) throws {
        // 1 x 4 x 1 x 16384: every fp16 bit pattern once, spread over four lanes.
        let tensor = try Tensor(shape: [1, 4, 1, 16_384])
        let lanes = (0..<65_536).map { i in UInt16(i) }
        try lanes.withUnsafeBytes { raw in
            try SliceConversion.unpack(raw.baseAddress!, into: tensor, threadCount: 2, portable: portable)
        }
        for texel in 0..<16_384 {
            for lane in 0..<4 {
                let want = Float(Float16(bitPattern: UInt16(texel * 4 + lane)))
                let got = tensor[lane * 16_384 + texel]
                #expect(sameFloat(got, want), "0x\(String(texel * 4 + lane, radix: 16))")
            }
        }
    }

    /// Chunks that cut layers mid-way, channel counts past a multiple of 4,
    /// batch > 1, widths not a multiple of 8: both paths agree with the
    /// layout's definition, and unpacking restores the rounded tensor.
    @Test(arguments: [[2, 7, 3, 13], [1, 5, 1, 1], [3, 4, 2, 9], [1, 13, 5, 17]])
    func layoutAndRoundTripAcrossChunks(shape: [Int]) throws {
        let input = try Tensor.uniform(shape: shape, in: -70_000...70_000, seed: 7)
        let (n, c, plane) = (shape[0], shape[1], shape[2] * shape[3])
        let slices = (c + 3) / 4
        for portable in [false, true] {
            let lanes = try Self.pack(input, portable: portable, chunkTexels: 5)
            for layer in 0..<(n * slices) {
                for pixel in 0..<plane {
                    for lane in 0..<4 {
                        let channel = (layer % slices) * 4 + lane
                        let got = lanes[(layer * plane + pixel) * 4 + lane]
                        let want = channel < c
                            ? Float16(input[((layer / slices) * c + channel) * plane + pixel]).bitPattern : 0
                        #expect(got == want, "layer \(layer) pixel \(pixel) lane \(lane)")
                    }
                }
            }
            let output = try Tensor(shape: shape)
            try lanes.withUnsafeBytes { raw in
                try SliceConversion.unpack(raw.baseAddress!, into: output, threadCount: 2, portable: portable,
                                           chunkTexels: 5)
            }
            for i in 0..<input.count { #expect(sameFloat(output[i], fp16Rounded(input[i]))) }
        }
    }

    static func pack(_ tensor: Tensor, portable: Bool, chunkTexels: Int = 4096) throws -> [UInt16] {
        var lanes = [UInt16](repeating: 0xFFFF, count: try SliceConversion.texelCount(tensor) * 4)
        try lanes.withUnsafeMutableBytes { raw in
            try SliceConversion.pack(tensor, into: raw.baseAddress!, threadCount: 2, portable: portable,
                                     chunkTexels: chunkTexels)
        }
        return lanes
    }
}
