import Testing
@testable import LayerKit

@Suite(.enabled(if: TestGPU.isEnabled))
struct SliceImageTests {
    /// Values that probe fp16 rounding: ties, subnormals, overflow, signs.
    static let specials: [Float] = [
        0, -0.0, 1, -1, 0.1, -0.3333, 65504, -65504, 65519, 65520, 70000, -1e6,
        .infinity, -.infinity, .nan, 1e-8, -1e-8, 5.96e-8, 2.98e-8, 3e-8, 6.1e-5, 6.09e-5,
        1 + 1.0 / 2048, 1 + 3.0 / 2048, 2049, 2051, 1e-30, -Float.leastNonzeroMagnitude, 3.14159, 1234.567,
    ]

    static func patterned(_ shape: [Int]) throws -> Tensor {
        let tensor = try Tensor(shape: shape)
        for i in 0..<tensor.count {
            tensor[i] = i < specials.count ? specials[i] : Float(i % 97) * 0.731 - 35.5 + Float(i) * 1e-3
        }
        return tensor
    }

    @Test(arguments: [[1, 1, 1, 1], [1, 3, 5, 7], [2, 5, 7, 5], [1, 6, 4, 4], [2, 8, 3, 2], [1, 13, 9, 11]])
    func roundTripEqualsFP16RoundingExactly(shape: [Int]) throws {
        let context = try TestGPU.get()
        let input = try Self.patterned(shape)
        let output = try context.download(context.upload(input))
        #expect(output.shape == shape)
        for i in 0..<input.count {
            #expect(sameFloat(output[i], fp16Rounded(input[i])), "element \(i): \(input[i]) -> \(output[i])")
        }
    }

    @Test(arguments: [1, 3, 5, 6, 13])
    func paddingLanesAreZeroAfterUpload(channels: Int) throws {
        let context = try TestGPU.get()
        let input = try Tensor(shape: [2, channels, 3, 4])
        for i in 0..<input.count { input[i] = Float(i) + 0.5 }
        let image = try context.upload(input)
        let lanes = try TestGPU.rawLanes(of: image)
        let texelsPerLayer = image.width * image.height
        for layer in 0..<image.texture.layers {
            let slice = layer % image.slices
            for texel in 0..<texelsPerLayer {
                for lane in 0..<4 where slice * 4 + lane >= channels {
                    let value = lanes[(layer * texelsPerLayer + texel) * 4 + lane]
                    #expect(value.bitPattern == 0, "layer \(layer) texel \(texel) lane \(lane)")
                }
            }
        }
    }

    @Test func layoutPutsChannelInSliceAndLane() throws {
        let context = try TestGPU.get()
        // 2x6x1x1: value = 10 * n + c, so each lane names its (n, c).
        let input = try Tensor(shape: [2, 6, 1, 1], values: (0..<12).map { Float(10 * ($0 / 6) + $0 % 6) })
        let lanes = try TestGPU.rawLanes(of: context.upload(input))
        // layer n*2 + s, lane c%4.
        let expected: [Float] = [0, 1, 2, 3, 4, 5, 0, 0, 10, 11, 12, 13, 14, 15, 0, 0]
        #expect(lanes.map(Float.init) == expected)
    }

    @Test func stagingBuffersAreReusedAcrossTransfers() throws {
        // A context of its own, so other tests' transfers do not move the count.
        let context = try GPUContext(device: TestGPU.get().device)
        let input = try Self.patterned([1, 6, 5, 7])
        #expect(context.stagingBufferAllocations == 0)
        let image = try context.upload(input)
        #expect(context.stagingBufferAllocations == 1)
        for _ in 0..<3 {
            let output = try context.download(context.upload(input))
            for i in 0..<input.count { #expect(sameFloat(output[i], fp16Rounded(input[i]))) }
        }
        // Upload and download of one shape share a size: the first buffer serves all.
        #expect(context.stagingBufferAllocations == 1)
        // Two transfers in flight in one command buffer need two buffers.
        let commands = try context.makeCommandBuffer()
        let tensor = try Tensor(shape: input.shape)
        try commands.upload(input, to: image)
        try commands.download(image, into: tensor)
        try commands.commit()
        try commands.waitUntilCompleted()
        #expect(context.stagingBufferAllocations == 2)
        for i in 0..<input.count { #expect(sameFloat(tensor[i], fp16Rounded(input[i]))) }
        // Another shape needs its own.
        _ = try context.upload(Self.patterned([1, 6, 5, 8]))
        #expect(context.stagingBufferAllocations == 3)
    }

    @Test func shapeMismatchIsAnError() throws {
        let context = try TestGPU.get()
        let image = try context.makeSliceImage(batch: 1, featureChannels: 3, height: 2, width: 2)
        let commands = try context.makeCommandBuffer()
        #expect(throws: LayerKitError.self) {
            try commands.upload(Tensor(shape: [1, 4, 2, 2]), to: image)
        }
        #expect(throws: LayerKitError.self) {
            try context.makeSliceImage(batch: 1, featureChannels: 0, height: 2, width: 2)
        }
    }
}
