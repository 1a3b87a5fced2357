/// Attention on the GPU: `Shaders/attention.comp`, flash-style. A workgroup
/// takes one batch item and a tile of 16 texel rows of Q (4 heads of a row
/// in 4-D Q, 4 rows of a head in 3-D Q), each row's head split over 4
/// invocations, and streams the keys and values in blocks through shared
/// memory with an online softmax in fp32, so the score matrix is never
/// held. The present key and value caches, when listed as outputs, are
/// written by `Shaders/attention_present.comp`. The scores output, head
/// sizes past `maxGPUHeadSize` and more keys than lavapipe's loop limit
/// lets the shader run (`loopIterations`) stay on the CPU.
extension Attention: ShapeLimitedGPULayer {
    public var hasGPUImplementation: Bool { true }

    /// The largest query/key and value head size of the GPU form: the
    /// shader's register arrays (32 texels for each of 4 invocations) and
    /// its shared key block are this long.
    static let maxGPUHeadSize = 128

    /// The loop iterations llvmpipe (lavapipe) lets one shader invocation
    /// run, all loops together, before it ends them without a word
    /// (gallivm's loop limiter, LP_MAX_TGSI_LOOP_ITERATIONS).
    static let gpuLoopLimit = 65_535

    /// The loop iterations `Shaders/attention.comp` runs in one invocation
    /// for geometry `g`, as llvmpipe counts them: each run of a loop costs
    /// its iterations plus the one that ends it. Per block of 8 keys: the
    /// block loop, the key and value loads (8 rows of the larger head
    /// rounded to 4, by 64 invocations), the invocation's 8 biases and its
    /// quarters of the two heads; before and after the blocks, its quarters
    /// of Q and Y and the accumulator's zeros. (Checked on lavapipe: at head
    /// size 64, 8,448 keys come out right and 8,456 wrong; at 128, 4,752
    /// and 4,760.)
    static func loopIterations(_ g: Geometry) -> Int {
        let (chunk, valueChunk) = ((g.headSize + 3) / 4, (g.valueHeadSize + 3) / 4)
        let span = (max(g.headSize, g.valueHeadSize) + 3) / 4 * 4
        let loads = (8 * span + 63) / 64
        let perBlock = 1 + 2 * (loads + 1) + (8 + 1) + (chunk + 1) + (valueChunk + 1)
        return (g.totalLength + 7) / 8 * perBlock + 1 + (chunk + 1) + 2 * (valueChunk + 1)
    }

    /// The most workgroups one dispatch axis holds (Vulkan guarantees 65,535).
    static let maxGPUGroups = 65_535

    /// What one prepared shape needs at encode: the kernels and the
    /// geometry of the tensors, whose ranks the images (all 4-D) no longer tell.
    struct GPUState {
        let attention: GPUKernel<AttentionConstants>
        let present: GPUKernel<AttentionPresentConstants>
        let geometry: Geometry
        /// The mask's own rank (its image is its shape padded with trailing 1s).
        let maskRank: Int
    }

    /// Nil for every case but the scores output, head sizes of 0 or past
    /// `maxGPUHeadSize`, more loop iterations than `gpuLoopLimit` and more
    /// workgroups than a dispatch holds.
    public func whyNotGPU(inputShapes: [[Int]], outputShapes: [[Int]]) -> String? {
        if options.outputCount == 4 {
            return "it also gives the scores output (qk_matmul_output), which only the CPU form writes"
        }
        // Bad shapes are the CPU form's error to throw.
        guard let g = try? geometry(inputShapes) else { return nil }
        let largest = max(g.headSize, g.valueHeadSize)
        guard largest <= Self.maxGPUHeadSize, min(g.headSize, g.valueHeadSize) > 0 else {
            return "its head sizes \(g.headSize) and \(g.valueHeadSize) are not 1 to \(Self.maxGPUHeadSize), "
                + "the register and shared-memory arrays of its GPU form"
        }
        let iterations = Self.loopIterations(g)
        guard iterations < Self.gpuLoopLimit else {
            return "its \(g.totalLength) keys of head size \(largest) need \(iterations) loop iterations in its GPU "
                + "kernel, past the \(Self.gpuLoopLimit) lavapipe runs"
        }
        let groups = gpuGroups(g)
        guard max(groups.x, groups.y, groups.z) <= Self.maxGPUGroups else {
            return "it needs \(groups.x)x\(groups.y)x\(groups.z) workgroups, past the \(Self.maxGPUGroups) a dispatch "
                + "axis holds"
        }
        return nil
    }

    /// Workgroups: tiles of 16 texel rows, head slices (4-D) or heads (3-D), batch items.
    func gpuGroups(_ g: Geometry) -> (x: Int, y: Int, z: Int) {
        let texelRows = g.packed ? (g.qLength + 3) / 4 : g.qLength
        return ((texelRows + 15) / 16, g.packed ? g.qHeads : (g.qHeads + 3) / 4, g.batch)
    }

    /// Creates the pipelines and keeps the geometry of `inputShapes`, once
    /// per context and shape.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws {
        _ = try gpuState.value(on: context, key: try inputShapes.map(Tensor.nchwShape)) {
            let g = try geometry(inputShapes)
            return GPUState(attention: try BuiltInShaders.attention.kernel(on: context),
                            present: try BuiltInShaders.attentionPresent.kernel(on: context),
                            geometry: g, maskRank: options.hasMask ? inputShapes[3].count : 0)
        }
    }

    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        let images = inputs.map(\.shape)
        let state = try gpuState.value(on: commandBuffer.context, key: images) {
            throw LayerKitError.unsupported("\(layerName): input images \(images.map(Tensor.describe)) were not "
                                            + "prepared (prepare(on:inputShapes:) tells their tensor ranks)")
        }
        let g = state.geometry
        guard outputs.count == options.outputCount, outputs.count <= 3 else {
            throw LayerKitError.unsupported("\(layerName) cannot run on the GPU: \(outputs.count) outputs (1 to 3 can)")
        }
        let mask = options.hasMask ? inputs[3] : nil
        let past = options.hasPast ? (key: inputs[inputs.count - 2], value: inputs[inputs.count - 1]) : nil
        var flags: UInt32 = g.packed ? 1 : 0
        if options.isCausal { flags |= 2 }
        if mask != nil { flags |= 4 }
        if past != nil { flags |= 8 }
        if options.nonpadLengths != nil { flags |= 16 }
        if options.maskedRowsAreNaN { flags |= 32 }
        let valid = try commandBuffer.temporaryBuffer(floats: g.batch) { base in
            for (b, length) in (options.nonpadLengths ?? []).enumerated() { base[b] = Float(length) }
        }
        let maskShape = (g.mask ?? [1, 1, 1, 1]).map(UInt32.init)
        let constants = AttentionConstants(
            shape: outputs[0].shapeConstants, qLength: UInt32(g.qLength), kvLength: UInt32(g.kvLength),
            pastLength: UInt32(g.pastLength), qHeads: UInt32(g.qHeads), kvHeads: UInt32(g.kvHeads),
            headSize: UInt32(g.headSize), valueHeadSize: UInt32(g.valueHeadSize), flags: flags,
            windowLeft: Int32(options.window.left), windowRight: Int32(options.window.right),
            scale: options.scale ?? 1 / Float(g.headSize).squareRoot(), softcap: options.softcap,
            maskRank: UInt32(state.maskRank), maskB: maskShape[0], maskH: maskShape[1], maskS: maskShape[2],
            maskT: maskShape[3])
        let groups = gpuGroups(g)
        // The workgroup is 8x8 invocations: 8 threads along x and y per group.
        let (q, k, v) = (inputs[0], inputs[1], inputs[2])
        // A dispatch binds at most 4 storage images: Q, K, V and Y. The mask and the past
        // caches are read from copies of their texels (any buffer stands in for an absent one).
        let maskTexels = try mask.map(commandBuffer.texelCopy) ?? valid
        let pastTexels = try past.map { (key: try commandBuffer.texelCopy(of: $0.key),
                                         value: try commandBuffer.texelCopy(of: $0.value)) }
        try commandBuffer.dispatch(state.attention, images: [q, k, v, outputs[0]],
                                   buffers: [valid, maskTexels, pastTexels?.key ?? valid, pastTexels?.value ?? valid],
                                   constants: constants, threads: (groups.x * 8, groups.y * 8, groups.z))
        for (index, current, cache) in [(1, k, pastTexels?.key), (2, v, pastTexels?.value)] where index < outputs.count {
            let present = outputs[index]
            try commandBuffer.dispatch(state.present, images: [current, present], buffers: [cache ?? valid],
                                       constants: AttentionPresentConstants(
                                           shape: present.shapeConstants, pastLength: UInt32(g.pastLength),
                                           newLength: UInt32(g.kvLength), packed: g.packed ? 1 : 0),
                                       threads: present.threads)
        }
    }
}

/// `attention.comp`'s push constants: Y's image, the geometry, the flags
/// (1 packed, 2 causal, 4 mask, 8 past caches, 16 valid key counts, 32
/// fully masked rows are NaN), the window, scale and softcap, and the
/// mask's rank and right-aligned shape.
struct AttentionConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var qLength: UInt32, kvLength: UInt32, pastLength: UInt32
    var qHeads: UInt32, kvHeads: UInt32
    var headSize: UInt32, valueHeadSize: UInt32
    var flags: UInt32
    var windowLeft: Int32, windowRight: Int32
    var scale: Float, softcap: Float
    var maskRank: UInt32, maskB: UInt32, maskH: UInt32, maskS: UInt32, maskT: UInt32
}

/// `attention_present.comp`'s push constants: the present cache's image,
/// the past and new row counts, 1 when the new K or V is 3-D.
struct AttentionPresentConstants: BitwiseCopyable {
    var shape: ShapeConstants
    var pastLength: UInt32, newLength: UInt32, packed: UInt32
}
