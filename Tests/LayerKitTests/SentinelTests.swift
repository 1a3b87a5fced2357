import Foundation
import Testing
import VulkanCompute
@testable import LayerKit

/// Out-of-bounds writes, in the spirit of llama.cpp's sentinel memory:
/// kernels write into a texture larger than their output, pre-filled with
/// a canary, and every texel outside the logical extent must still hold it;
/// staging buffers carry canary bytes past their used length.
@Suite(.enabled(if: TestGPU.isEnabled))
struct SentinelTests {
    /// The fp16 bit pattern the margins are filled with (-427.25: finite,
    /// and no op here maps anything to exactly it in a margin).
    static let canary: UInt16 = 0xDEAD
    /// Extra columns, rows and array layers around the output.
    static let margin = (x: 3, y: 2, layers: 2)

    /// Every catalog op (its example parameters when it has some, per-channel
    /// weights when it takes them), for channels 1, 5, 6 and odd extents.
    @Test(arguments: [1, 5, 6])
    func noKernelWritesOutsideItsOutput(channels: Int) throws {
        let context = try TestGPU.get()
        for shape in [[2, channels, 3, 5], [1, channels, 7, 1]] {
            let input = try Self.inputView(shape, context: context)
            for definition in OpDefinition.catalog {
                let layer = try ElementwiseLayer(definition: definition, parameters: definition.example)
                if !definition.weightNames.isEmpty {
                    let values = try Tensor.uniform(shape: [channels], in: 0.25...2, seed: 3).values
                    try layer.setWeightData(definition.weightNames.map { _ in
                        values.withUnsafeBufferPointer { Data(buffer: $0) }
                    })
                }
                let output = try Self.canaryFilledView(batch: shape[0], channels: channels, height: shape[2],
                                                       width: shape[3], context: context)
                let commands = try context.makeCommandBuffer()
                try layer.encode(commandBuffer: commands, inputs: [input], outputs: [output])
                try commands.commit()
                try commands.waitUntilCompleted()
                let damage = try Self.damage(in: output)
                #expect(damage.isEmpty, "\(definition.name) \(Tensor.describe(shape)): \(damage.count) texel lanes, e.g. \(damage.prefix(4))")
            }
        }
    }

    /// A fused chain dispatches once too; same check.
    @Test func aFusedChainWritesOnlyItsOutput() throws {
        let context = try TestGPU.get()
        let input = try Self.inputView([3, 6, 5, 3], context: context)
        let fused = try FusedLayer([ElementwiseLayer(parameters: ["op": "Elu"]), Swish(beta: 0.7)])
        let output = try Self.canaryFilledView(batch: 3, channels: 6, height: 5, width: 3, context: context)
        let commands = try context.makeCommandBuffer()
        try fused.encode(commandBuffer: commands, inputs: [input], outputs: [output])
        try commands.commit()
        try commands.waitUntilCompleted()
        #expect(try Self.damage(in: output).isEmpty)
    }

    /// The negative control: the check does see a write into the margin.
    @Test func theCheckSeesAWriteIntoTheMargin() throws {
        let context = try TestGPU.get()
        let output = try Self.canaryFilledView(batch: 1, channels: 5, height: 2, width: 2, context: context)
        // Viewing one more column than the output has and running a kernel
        // over it stands in for a kernel that overshoots by a column.
        let wider = try SliceImage(texture: output.texture, batch: 1, featureChannels: 5, height: 2, width: 3)
        let commands = try context.makeCommandBuffer()
        try commands.dispatch(PerElementKernel(name: "Identity", body: "x"), input: wider, output: wider)
        try commands.commit()
        try commands.waitUntilCompleted()
        #expect(try !Self.damage(in: output).isEmpty)
    }

    /// Uploads, downloads and weight buffers never write past the length
    /// they took from the staging pool (whose buffers here carry 256 canary
    /// bytes beyond it), for odd shapes, padding lanes included.
    @Test func stagingBuffersAreNotOverrun() throws {
        let context = try GPUContext(device: TestGPU.get().device, stagingGuardBytes: 256)
        for shape in [[1, 1, 1, 1], [2, 5, 3, 7], [1, 6, 9, 1], [3, 13, 2, 5]] {
            let input = try Tensor.uniform(shape: shape, in: -4...4, seed: 2)
            let prelu = try ElementwiseLayer(parameters: ["op": "PRelu"])
            try prelu.setWeightData([[Float](repeating: 0.25, count: shape[1]).withUnsafeBufferPointer { Data(buffer: $0) }])
            let run = try Backend(computeUnits: .gpu, context: context).run(prelu, inputs: [input])
            #expect(run.placement == .gpu)
            #expect(try context.download(context.upload(input)).shape == shape)
        }
        #expect(context.stagingBufferAllocations > 0)
        #expect(context.stagingPool.overruns == 0)
        // The negative control: a write one byte past the used length is seen.
        let buffer = try context.stagingPool.take(length: 16)
        buffer.contents?.storeBytes(of: 0, toByteOffset: 16, as: UInt8.self)
        context.stagingPool.giveBack(buffer)
        #expect(context.stagingPool.overruns == 1)
    }

    /// An input view of `shape` over a texture `margin` larger, random
    /// values everywhere (its padding lanes too, which kernels must not
    /// pass on): kernels take their extent from the input, so it must be
    /// the view's, not the texture's.
    static func inputView(_ shape: [Int], context: GPUContext) throws -> SliceImage {
        let layers = shape[0] * ((shape[1] + 3) / 4) + margin.layers
        let whole = try context.upload(Tensor.uniform(
            shape: [1, 4 * layers, shape[2] + margin.y, shape[3] + margin.x], in: -4...4, seed: 9))
        return try SliceImage(texture: whole.texture, batch: shape[0], featureChannels: shape[1],
                              height: shape[2], width: shape[3])
    }

    /// An output view of `batch × channels × height × width` over a texture
    /// `margin` larger in every direction, every lane set to `canary`.
    static func canaryFilledView(batch: Int, channels: Int, height: Int, width: Int,
                                 context: GPUContext) throws -> SliceImage {
        let layers = batch * ((channels + 3) / 4) + margin.layers
        let texture = try Image(device: context.device, width: width + margin.x, height: height + margin.y,
                                layers: layers)
        let lanes = texture.width * texture.height * layers * 4
        let fill = try Buffer(device: context.device, length: lanes * 2)
        fill.contents!.initializeMemory(as: UInt16.self, repeating: canary, count: lanes)
        let commands = try CommandBuffer(device: context.device)
        try commands.copy(from: fill, to: texture)
        try commands.commit()
        try commands.waitUntilCompleted()
        return try SliceImage(texture: texture, batch: batch, featureChannels: channels, height: height, width: width)
    }

    /// `(layer, y, x, lane)` of every lane that is wrong: outside the logical
    /// extent, not the canary; a padding lane of the last slice, not zero.
    static func damage(in view: SliceImage) throws -> [(Int, Int, Int, Int)] {
        let lanes = try TestGPU.rawLanes(of: view)
        let texture = view.texture
        var wrong: [(Int, Int, Int, Int)] = []
        for layer in 0..<texture.layers {
            for y in 0..<texture.height {
                for x in 0..<texture.width {
                    let inside = layer < view.layers && y < view.height && x < view.width
                    for lane in 0..<4 {
                        let bits = lanes[((layer * texture.height + y) * texture.width + x) * 4 + lane].bitPattern
                        if !inside {
                            if bits != canary { wrong.append((layer, y, x, lane)) }
                        } else if (layer % view.slices) * 4 + lane >= view.featureChannels, bits != 0 {
                            wrong.append((layer, y, x, lane))
                        }
                    }
                }
            }
        }
        return wrong
    }
}
