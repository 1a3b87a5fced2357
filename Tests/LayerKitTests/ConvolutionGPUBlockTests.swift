import Testing
import VulkanCompute
@testable import LayerKit

/// `conv2d.comp`'s blocked forms: every block (output slices x texels) and
/// the fp16-weight path forced on each shape, against the float64
/// definition under the parity rule (|gpu - ref| <= 1e-3 max(1, |ref|),
/// inputs rounded to fp16 first); the block chosen by shape; the barriers
/// a command buffer puts between dependent work only.
struct ConvolutionGPUBlockTests {
    /// Odd channel counts, widths that leave a block's ragged end, stride 2,
    /// pads 0/1/2, dilation 2, batch 2.
    static let denseCases: [ConvCase] = [
        ConvCase(input: [1, 1, 1, 1], outputChannels: 1, kernel: [1, 1]),
        ConvCase(input: [2, 3, 7, 13], outputChannels: 5, kernel: [3, 3], padding: .explicit([1, 1, 1, 1])),
        ConvCase(input: [1, 5, 13, 7], outputChannels: 17, kernel: [3, 3], strides: [2, 2],
                 padding: .explicit([1, 2, 0, 1])),
        ConvCase(input: [2, 17, 3, 3], outputChannels: 3, kernel: [3, 3], dilations: [2, 2],
                 padding: .explicit([2, 2, 2, 2]), bias: false),
        ConvCase(input: [1, 64, 7, 7], outputChannels: 64, kernel: [3, 3], padding: .explicit([1, 1, 1, 1])),
        ConvCase(input: [2, 64, 13, 13], outputChannels: 17, kernel: [1, 1]),
        ConvCase(input: [1, 3, 13, 13], outputChannels: 64, kernel: [7, 7], strides: [2, 2],
                 padding: .explicit([3, 3, 3, 3])),
        ConvCase(input: [1, 17, 13, 1], outputChannels: 5, kernel: [3, 1], padding: .explicit([1, 0, 1, 0])),
        ConvCase(input: [2, 5, 1, 13], outputChannels: 64, kernel: [1, 3], strides: [1, 2],
                 padding: .explicit([0, 1, 0, 1])),
        // A Gemm's shape: [N, K] as a 1x1 image.
        ConvCase(input: [2, 17, 1, 1], outputChannels: 5, kernel: [1, 1]),
    ]

    static let depthwiseCases: [ConvCase] = [
        ConvCase(input: [2, 5, 7, 13], outputChannels: 5, kernel: [3, 3], padding: .explicit([1, 1, 1, 1]), group: 5),
        ConvCase(input: [1, 17, 13, 13], outputChannels: 17, kernel: [3, 3], strides: [2, 2],
                 padding: .explicit([1, 1, 1, 1]), group: 17),
        ConvCase(input: [1, 3, 7, 9], outputChannels: 3, kernel: [5, 5], dilations: [2, 2],
                 padding: .explicit([2, 2, 2, 2]), group: 3, bias: false),
        ConvCase(input: [2, 64, 1, 3], outputChannels: 64, kernel: [3, 3], padding: .explicit([1, 1, 1, 1]), group: 64),
    ]

    static var allBlocks: [ConvolutionBlock] {
        ConvolutionBlock.outputSliceChoices.flatMap { s in
            ConvolutionBlock.texelChoices.map { ConvolutionBlock(outputSlices: s, texels: $0) }
        }
    }

    /// Runs `c` with `options` on the GPU against the definition; with fp16
    /// weights the definition takes the weights rounded to fp16 too.
    func check(_ c: ConvCase, options: ConvolutionGPUOptions, seed: UInt64) throws {
        let layer = try c.layer(seed: seed)
        layer.gpuOptions = options
        let x = try seededTensor(c.input, seed: seed + 7).roundedToHalf()
        let w = layer.usesFloat16Weights ? try layer.weights.roundedToHalf() : layer.weights
        let expected = c.reference(x: x, w: w, bias: layer.bias)
        let y = try runOnGPU(layer, input: x, outputShape: expected.shape)
        expectClose(y.values, expected.values, relative: 1e-3,
                    "\(c.testDescription) block \(options.block.map(String.init(describing:)) ?? "chosen") "
                    + "f16 weights \(options.float16Weights ?? false) shared \(options.sharedWeights ?? false)")
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: denseCases)
    func everyDenseBlockMatchesTheDefinition(_ c: ConvCase) throws {
        for block in Self.allBlocks {
            try check(c, options: ConvolutionGPUOptions(block: block, float16Weights: false), seed: 31)
        }
        try check(c, options: ConvolutionGPUOptions(), seed: 32)
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: denseCases)
    func float16WeightsMatchTheDefinitionOnFP16Weights(_ c: ConvCase) throws {
        for block in [ConvolutionBlock.single, ConvolutionBlock(outputSlices: 4, texels: 2),
                      ConvolutionBlock(outputSlices: 2, texels: 4)] {
            try check(c, options: ConvolutionGPUOptions(block: block, float16Weights: true), seed: 33)
        }
    }

    /// The shared-weight form forced on, in blocks whose chunks of 32
    /// (tap, input slice) steps divide neither the steps nor the channels
    /// (e.g. 9 taps x 16 slices, 7x7 x 1 slice), fp32 and fp16 weights,
    /// and with spare invocations in the last workgroup of a map.
    @Test(.enabled(if: TestGPU.isEnabled), arguments: denseCases)
    func sharedWeightsMatchTheDefinition(_ c: ConvCase) throws {
        for block in [ConvolutionBlock.single, ConvolutionBlock(outputSlices: 4, texels: 1),
                      ConvolutionBlock(outputSlices: 2, texels: 4), ConvolutionBlock(outputSlices: 4, texels: 8),
                      ConvolutionBlock(outputSlices: 8, texels: 2)] {
            let layer = try c.layer(seed: 1)
            layer.gpuOptions = ConvolutionGPUOptions(block: block, sharedWeights: true)
            #expect(layer.block(forInputShape: c.input).sharedWeights, "forced on lavapipe")
            try check(c, options: ConvolutionGPUOptions(block: block, float16Weights: false, sharedWeights: true),
                      seed: 35)
        }
        try check(c, options: ConvolutionGPUOptions(block: ConvolutionBlock(outputSlices: 4, texels: 2),
                                                    float16Weights: true, sharedWeights: true), seed: 36)
        try check(c, options: ConvolutionGPUOptions(sharedWeights: true), seed: 37)
    }

    /// Shared weights over deep sums (K = 500 * 9: 1,125 steps, 36 chunks, the last ragged), batch 2.
    @Test(.enabled(if: TestGPU.isEnabled))
    func sharedWeightsOverDeepSums() throws {
        let c = ConvCase(input: [2, 500, 3, 5], outputChannels: 9, kernel: [3, 3], padding: .explicit([1, 1, 1, 1]))
        try check(c, options: ConvolutionGPUOptions(block: ConvolutionBlock(outputSlices: 4, texels: 1),
                                                    sharedWeights: true), seed: 53)
    }

    /// Shared weights where a device that is not a CPU has the room and
    /// the map fills half a workgroup; never on a CPU device unless forced;
    /// a tile over the device's limit falls back, forced or not.
    @Test func sharedWeightsFollowTheDeviceAndItsLimit() throws {
        let dense = ConvolutionVariant.dense
        let gpu = ConvolutionBlock.chosen(for: dense, outputSlices: 16, width: 56, height: 56, batch: 1,
                                          onCPU: false, sharedMemory: 49_152)
        #expect(gpu.sharedWeights && gpu.sharedTileBytes == 32 * 4 * 64)
        #expect(ConvolutionBlock.chosen(for: dense, outputSlices: 128, width: 7, height: 7, batch: 1,
                                        onCPU: false, sharedMemory: 49_152).sharedWeights)
        #expect(!ConvolutionBlock.chosen(for: dense, outputSlices: 128, width: 4, height: 4, batch: 1,
                                         onCPU: false, sharedMemory: 49_152).sharedWeights, "16 blocks")
        #expect(!ConvolutionBlock.chosen(for: dense, outputSlices: 16, width: 56, height: 56, batch: 1,
                                         onCPU: true, sharedMemory: 49_152).sharedWeights, "lavapipe")
        #expect(!ConvolutionBlock.chosen(for: dense, outputSlices: 16, width: 56, height: 56, batch: 1,
                                         onCPU: false, sharedMemory: 8191).sharedWeights, "8 KiB tile")
        #expect(!ConvolutionBlock.chosen(for: .depthwise, outputSlices: 16, width: 56, height: 56, batch: 1,
                                         onCPU: false, sharedMemory: 49_152).sharedWeights)

        let c = ConvCase(input: [1, 64, 56, 56], outputChannels: 64, kernel: [3, 3], padding: .explicit([1, 1, 1, 1]))
        let layer = try c.layer(seed: 1)
        #expect(layer.block(forInputShape: c.input, onCPU: false, sharedMemory: 49_152).sharedWeights)
        #expect(!layer.block(forInputShape: c.input, onCPU: true, sharedMemory: 49_152).sharedWeights)
        #expect(!layer.block(forInputShape: c.input, onCPU: false, sharedMemory: 1024).sharedWeights)
        layer.gpuOptions = ConvolutionGPUOptions(block: ConvolutionBlock(outputSlices: 8, texels: 1), sharedWeights: true)
        #expect(layer.block(forInputShape: c.input, onCPU: true, sharedMemory: 16_384).sharedWeights)
        #expect(!layer.block(forInputShape: c.input, onCPU: true, sharedMemory: 16_383).sharedWeights, "forced, too big")
        layer.gpuOptions = ConvolutionGPUOptions(sharedWeights: false)
        #expect(!layer.block(forInputShape: c.input, onCPU: false, sharedMemory: 49_152).sharedWeights)
        let grouped = try ConvCase(input: [1, 6, 8, 8], outputChannels: 6, kernel: [3, 3], group: 3).layer(seed: 1)
        grouped.gpuOptions.sharedWeights = true
        #expect(!grouped.block(forInputShape: [1, 6, 8, 8]).sharedWeights)
        // lavapipe's own limit, as the device reports it.
        if TestGPU.isEnabled {
            #expect(try TestGPU.get().deviceInfo.maxComputeSharedMemorySize >= 16_384)
        }
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: depthwiseCases)
    func everyDepthwiseBlockMatchesTheDefinition(_ c: ConvCase) throws {
        for texels in ConvolutionBlock.texelChoices {
            // Output-slice blocks do not apply to depthwise forms: forced 4, run 1.
            try check(c, options: ConvolutionGPUOptions(block: ConvolutionBlock(outputSlices: 4, texels: texels)),
                      seed: 41)
        }
    }

    /// The deepest sums of resnet18 (K = 512 * 9 = 4608) in every block the
    /// shape would take, fp32 weights: within the parity rule.
    @Test(.enabled(if: TestGPU.isEnabled))
    func deepSumsStayWithinTheParityRule() throws {
        let c = ConvCase(input: [1, 512, 3, 5], outputChannels: 9, kernel: [3, 3], padding: .explicit([1, 1, 1, 1]))
        for block in [ConvolutionBlock(outputSlices: 4, texels: 1), ConvolutionBlock(outputSlices: 2, texels: 4)] {
            try check(c, options: ConvolutionGPUOptions(block: block), seed: 51)
        }
    }

    /// A grouped convolution (neither dense nor depthwise) ignores a forced block.
    @Test(.enabled(if: TestGPU.isEnabled))
    func groupedFormsIgnoreBlocks() throws {
        let c = ConvCase(input: [2, 6, 7, 13], outputChannels: 9, kernel: [3, 3], strides: [2, 1],
                         padding: .explicit([1, 1, 1, 1]), group: 3)
        let layer = try c.layer(seed: 1)
        layer.gpuOptions.block = ConvolutionBlock(outputSlices: 4, texels: 4)
        #expect(layer.block(forInputShape: c.input) == .single)
        try check(c, options: ConvolutionGPUOptions(block: ConvolutionBlock(outputSlices: 4, texels: 4)), seed: 61)
    }

    /// On lavapipe (a CPU) every map blocks over texels, rows of 7 or more by 8;
    /// on a real GPU small maps block over channels only.
    @Test func theBlockFollowsTheShapeAndTheDevice() {
        let dense = ConvolutionVariant.dense
        #expect(ConvolutionBlock.chosen(for: dense, outputSlices: 128, width: 7, height: 7, batch: 1, onCPU: false)
            == ConvolutionBlock(outputSlices: 4, texels: 1))
        #expect(ConvolutionBlock.chosen(for: dense, outputSlices: 128, width: 7, height: 7, batch: 1, onCPU: true)
            == ConvolutionBlock(outputSlices: 4, texels: 8))
        #expect(ConvolutionBlock.chosen(for: dense, outputSlices: 128, width: 5, height: 5, batch: 1, onCPU: true)
            == ConvolutionBlock(outputSlices: 4, texels: 4))
        #expect(ConvolutionBlock.chosen(for: dense, outputSlices: 16, width: 56, height: 56, batch: 1, onCPU: true)
            == ConvolutionBlock(outputSlices: 4, texels: 8))
        #expect(ConvolutionBlock.chosen(for: dense, outputSlices: 16, width: 56, height: 56, batch: 1, onCPU: false)
            .texels > 1)
        #expect(ConvolutionBlock.chosen(for: dense, outputSlices: 1, width: 1, height: 1, batch: 2) == .single)
        #expect(ConvolutionBlock.chosen(for: .depthwise, outputSlices: 36, width: 56, height: 56, batch: 1)
            == ConvolutionBlock(outputSlices: 1, texels: 4))
        #expect(ConvolutionBlock.chosen(for: .grouped, outputSlices: 36, width: 56, height: 56, batch: 1) == .single)
    }

    /// The shader's bindings as reflection reads them: the images and
    /// buffers it declares `readonly`, and the output it writes.
    @Test func reflectionFindsTheReadOnlyBindings() throws {
        let source = try GPUContext.builtInSource("conv2d.comp")
        let spirv = try ShaderCompiler.shared.compile(source: source, name: "conv2d.comp",
                                                      includes: GPUContext.includes, defines: [])
        #expect(try SPIRVReflection(spirv: spirv).readOnlyBindings == [0, 2, 3])
    }

    /// Independent dispatches share no barrier; a read of an image written
    /// since the last barrier, and a write of one read since then, get one.
    @Test(.enabled(if: TestGPU.isEnabled))
    func barriersGoOnlyBetweenDependentWork() throws {
        let context = try TestGPU.get()
        let c = ConvCase(input: [1, 5, 6, 7], outputChannels: 5, kernel: [3, 3], padding: .explicit([1, 1, 1, 1]))
        let (a, b) = (try c.layer(seed: 71), try c.layer(seed: 72))
        let (x1, x2) = (try seededTensor(c.input, seed: 73).roundedToHalf(), try seededTensor(c.input, seed: 74).roundedToHalf())
        let (in1, in2) = (try context.upload(x1), try context.upload(x2))
        let images = try (0..<3).map { _ in try context.makeSliceImage(shape: c.input) }
        let commands = try context.makeCommandBuffer()
        try a.encode(commandBuffer: commands, inputs: [in1], outputs: [images[0]])
        try b.encode(commandBuffer: commands, inputs: [in2], outputs: [images[1]])
        #expect(commands.barrierCount == 0)
        try a.encode(commandBuffer: commands, inputs: [images[0]], outputs: [images[2]])  // reads a write
        #expect(commands.barrierCount == 1)
        try b.encode(commandBuffer: commands, inputs: [in2], outputs: [images[0]])  // writes what was just read
        #expect(commands.barrierCount == 2)
        try commands.commit()
        try commands.waitUntilCompleted()
        let first = c.reference(x: x1, w: a.weights, bias: a.bias)
        expectClose(try context.download(images[1]).values, c.reference(x: x2, w: b.weights, bias: b.bias).values,
                    relative: 1e-3, "independent")
        expectClose(try context.download(images[2]).values,
                    c.reference(x: try Tensor(shape: first.shape, values: first.values.map(Float.init)).roundedToHalf(),
                                w: a.weights, bias: a.bias).values, relative: 2e-3, "dependent")
        expectClose(try context.download(images[0]).values, c.reference(x: x2, w: b.weights, bias: b.bias).values,
                    relative: 1e-3, "overwritten after its read")
    }
}
