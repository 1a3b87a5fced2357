import Foundation
import Testing
import VulkanCompute
@testable import LayerKit

/// Out-of-bounds writes, in the spirit of llama.cpp's sentinel memory:
/// kernels write into an image larger than their output, pre-filled with a
/// canary, and every texel outside the logical extent must still hold it;
/// staging buffers carry canary bytes past their used length.
///
/// A kernel takes its extent from its push constants (`ShapeConstants`), so
/// the test dispatches each op's compiled element-wise kernel with the
/// constants of the logical extent over larger images; per-channel weights
/// are laid out as `elementwise.comp` reads them (set k, channel c at
/// k * slices * 4 + c).
@Suite(.enabled(if: TestGPU.isEnabled))
struct SentinelTests {
    /// The fp16 bit pattern the margins are filled with (-427.25: finite,
    /// and no op here maps anything to exactly it in a margin).
    static let canary: UInt16 = 0xDEAD
    /// Extra columns, rows and array layers around the output.
    static let margin = (x: 3, y: 2, layers: 2)

    /// An NCHW extent inside a larger image: what the kernel is told.
    struct Extent {
        let batch, channels, height, width: Int
        var slices: Int { (channels + 3) / 4 }
        var layers: Int { batch * slices }
        var constants: ShapeConstants {
            ShapeConstants(width: UInt32(width), height: UInt32(height), channels: UInt32(channels),
                           slices: UInt32(slices), layers: UInt32(layers))
        }
    }

    /// Every catalog op (its example parameters when it has some, per-channel
    /// weights when it takes them), for channels 1, 5, 6 and odd extents.
    @Test(arguments: [1, 5, 6])
    func noKernelWritesOutsideItsOutput(channels: Int) throws {
        let context = try TestGPU.get()
        for shape in [[2, channels, 3, 5], [1, channels, 7, 1]] {
            let extent = Extent(batch: shape[0], channels: channels, height: shape[2], width: shape[3])
            let input = try Self.randomImage(around: extent, context: context)
            for definition in OpDefinition.catalog {
                let layer = try ElementwiseLayer(definition: definition, parameters: definition.example)
                if !definition.weightNames.isEmpty {
                    let values = try Tensor.uniform(shape: [channels], in: 0.25...2, seed: 3).values
                    try layer.setWeightData(definition.weightNames.map { _ in
                        values.withUnsafeBufferPointer { Data(buffer: $0) }
                    })
                }
                let output = try Self.canaryImage(around: extent, context: context)
                try Self.run(layer.chain, over: extent, input: input, output: output, context: context)
                let damage = try Self.damage(in: output, outside: extent)
                #expect(damage.isEmpty, "\(definition.name) \(Tensor.describe(shape)): \(damage.count) texel lanes, e.g. \(damage.prefix(4))")
            }
        }
    }

    /// A fused chain dispatches once too; same check.
    @Test func aFusedChainWritesOnlyItsOutput() throws {
        let context = try TestGPU.get()
        let extent = Extent(batch: 3, channels: 6, height: 5, width: 3)
        let fused = try FusedLayer([ElementwiseLayer(parameters: ["op": "Elu"]), Swish(beta: 0.7)])
        let output = try Self.canaryImage(around: extent, context: context)
        try Self.run(fused.chain, over: extent, input: Self.randomImage(around: extent, context: context),
                     output: output, context: context)
        #expect(try Self.damage(in: output, outside: extent).isEmpty)
    }

    /// The negative control: the check does see a write into the margin.
    @Test func theCheckSeesAWriteIntoTheMargin() throws {
        let context = try TestGPU.get()
        let extent = Extent(batch: 1, channels: 5, height: 2, width: 2)
        let output = try Self.canaryImage(around: extent, context: context)
        // Telling the kernel one more column than the output has stands in
        // for a kernel that overshoots by a column.
        let wider = Extent(batch: 1, channels: 5, height: 2, width: 3)
        try Self.run(FormulaChain(stages: [.init(name: "Identity", formula: .input, scalars: [:], channelValues: [:])]),
                     over: wider, input: output, output: output, context: context)
        #expect(try !Self.damage(in: output, outside: extent).isEmpty)
    }

    /// Runs `chain`'s element-wise kernel from `input` to `output` (images
    /// at least as large as `extent`), told that `extent` is the image.
    static func run(_ chain: FormulaChain, over extent: Extent, input: SliceImage, output: SliceImage,
                    context: GPUContext) throws {
        let (kernel, parameters, weights) = try chain.gpuKernel()
        var constants = PerElementConstants.zero
        constants.shape = extent.constants
        withUnsafeMutableBytes(of: &constants.parameters) { bytes in
            for (i, value) in parameters.enumerated() { bytes.storeBytes(of: value, toByteOffset: 4 * i, as: Float.self) }
        }
        let commands = try context.makeCommandBuffer()
        let padded = extent.slices * 4
        let weightBuffer = try commands.temporaryBuffer(floats: weights.count * padded) { base in
            for (k, set) in weights.enumerated() {
                for (c, value) in set.enumerated() { base[k * padded + c] = value }
            }
        }
        try commands.dispatch(context.kernel(for: kernel), images: [input, output], buffers: [weightBuffer],
                              constants: constants, threads: (extent.width, extent.height, extent.layers))
        try commands.commit()
        try commands.waitUntilCompleted()
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

    /// An image `margin` larger than `extent` in every direction, random
    /// values everywhere (in the extent's padding lanes too, which kernels
    /// must not pass on).
    static func randomImage(around extent: Extent, context: GPUContext) throws -> SliceImage {
        try context.upload(Tensor.uniform(shape: wholeShape(around: extent), in: -4...4, seed: 9))
    }

    /// An image `margin` larger than `extent` in every direction, every lane
    /// set to `canary` (its channels are a multiple of 4: no padding lanes).
    static func canaryImage(around extent: Extent, context: GPUContext) throws -> SliceImage {
        let shape = wholeShape(around: extent)
        let value = Float(Float16(bitPattern: canary))
        return try context.upload(Tensor(shape: shape, values: [Float](repeating: value, count: shape.reduce(1, *))))
    }

    /// One item of 4 × layers channels, `margin` past `extent`.
    static func wholeShape(around extent: Extent) -> [Int] {
        [1, 4 * (extent.layers + margin.layers), extent.height + margin.y, extent.width + margin.x]
    }

    /// `(layer, y, x, lane)` of every lane of `image` that is wrong: outside
    /// `extent`, not the canary; a padding lane of the extent's last slice, not zero.
    static func damage(in image: SliceImage, outside extent: Extent) throws -> [(Int, Int, Int, Int)] {
        let lanes = try TestGPU.rawLanes(of: image)
        var wrong: [(Int, Int, Int, Int)] = []
        for layer in 0..<image.layers {
            for y in 0..<image.height {
                for x in 0..<image.width {
                    let inside = layer < extent.layers && y < extent.height && x < extent.width
                    for lane in 0..<4 {
                        let bits = lanes[((layer * image.height + y) * image.width + x) * 4 + lane].bitPattern
                        if !inside {
                            if bits != canary { wrong.append((layer, y, x, lane)) }
                        } else if (layer % extent.slices) * 4 + lane >= extent.channels, bits != 0 {
                            wrong.append((layer, y, x, lane))
                        }
                    }
                }
            }
        }
        return wrong
    }
}
