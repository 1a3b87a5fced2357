import Foundation

/// ONNX Attention (opsets 23 to 25): scaled dot-product attention of the
/// queries Q against the keys K and values V, per batch item and query head,
/// `Y = softmax(scale * Q Kᵀ (softcapped) + bias) V`.
///
/// - Inputs Q, K, V, then an optional additive mask and optional past key
///   and value caches (`Options.hasMask`, `Options.hasPast`). Q, K and V are
///   all 4-D `[batch, heads, sequence, head size]`, or all 3-D
///   `[batch, sequence, heads * head size]` with the head counts given.
/// - Grouped-query (and multi-query) attention: `qHeads` a multiple of the
///   key/value heads, query head `h` reading key/value head
///   `h / (qHeads / kvHeads)`.
/// - The bias of query `i` and key `j` adds: the mask (a float tensor
///   broadcast to `[batch, qHeads, qLength, n]`, its last axis never
///   broadcast: keys from `n` on get `-inf`, as ONNX pads it), `-inf` for
///   `j > i + offset` when causal and outside the sliding window, and `-inf`
///   for `j >= nonpadLengths[b]`. `offset` is the past length with a past
///   cache, `nonpadLengths[b] - qLength` with those lengths, else 0. A query
///   row whose every key is masked is zero (not NaN), in Y and in the
///   probabilities; NaN in Y with `Options.maskedRowsAreNaN`.
/// - Outputs: Y (of Q's rank), then the present key and value (the past and
///   the new keys concatenated, 4-D), then the scores (`ScoresOutput`).
///
/// On the CPU in float32 (the GPU form: Attention+GPU.swift): each work
/// item is a tile of query rows of one head, run against blocks of keys
/// with an online softmax (a running maximum and sum per row, the partial
/// outputs rescaled as the maximum grows), so the `qLength x totalLength`
/// score matrix is never held, only one block of it (`scratchCount`).
/// Items are split over threads; each is computed the same way on any
/// thread, so results do not depend on the thread count.
public final class Attention: Layer, Sendable {
    /// What the fourth output (ONNX's `qk_matmul_output`) holds, by ONNX's
    /// `qk_matmul_output_mode`.
    public enum ScoresOutput: Int, Sendable {
        /// `scale * Q Kᵀ` (mode 0; before the softcap, as onnxruntime does).
        case products = 0
        /// The products after the softcap (mode 1).
        case softcapped = 1
        /// The softcapped products plus the bias (mode 2).
        case biased = 2
        /// The softmax probabilities (mode 3); a fully masked row is zero.
        case probabilities = 3
    }

    /// The attributes and optional inputs of one Attention node.
    public struct Options: Sendable {
        /// The query and key/value head counts of 3-D inputs (required
        /// there); of 4-D inputs, checked against their head axis when given.
        public var qHeads: Int?
        public var kvHeads: Int?
        /// The factor on Q Kᵀ; nil: `1 / sqrt(head size)`.
        public var scale: Float?
        /// Whether query `i` sees only keys `j <= i + offset`.
        public var isCausal = false
        /// The sliding window of opset 25: query `i` sees keys `j` with
        /// `i + offset - j <= left` and `j - (i + offset) <= right`; -1 is
        /// no bound on that side.
        public var window = (left: -1, right: -1)
        /// `softcap * tanh(s / softcap)` on each product `s`; 0 is none.
        public var softcap: Float = 0
        /// Whether the fourth input is an additive mask.
        public var hasMask = false
        /// Whether past key and value caches follow (the mask, when there
        /// is one, first).
        public var hasPast = false
        /// Per batch item, how many leading keys are valid (ONNX's
        /// `nonpad_kv_seqlen`); nil: all.
        public var nonpadLengths: [Int]?
        /// How many outputs the layer makes, 1 to 4: Y, present key,
        /// present value, scores.
        public var outputCount = 1
        /// What the fourth output holds.
        public var scores = ScoresOutput.products
        /// Whether a query row with no allowed key is NaN in Y rather than
        /// zero: what Softmax then MatMul make of an all -inf row, kept by
        /// `ModelGraph.fuseAttention()` for the exporters' form without the
        /// IsNaN / Where guard.
        public var maskedRowsAreNaN = false

        public init() {}
    }

    public let options: Options
    /// The GPU kernels and the tensor geometry, per context and input image
    /// shapes (Attention+GPU.swift).
    let gpuState = PerContext<GPUState>()

    /// Throws for a head count below 1, a scale that is not finite and
    /// positive, a softcap that is not finite and >= 0, a window bound
    /// below -1, a negative valid length or an output count not 1 to 4.
    public init(options: Options) throws {
        for (name, heads) in [("q_num_heads", options.qHeads), ("kv_num_heads", options.kvHeads)] {
            if let heads, heads < 1 { throw LayerKitError.invalidParameter("Attention: \(name) \(heads) must be >= 1") }
        }
        if let scale = options.scale, !(scale.isFinite && scale > 0) {
            throw LayerKitError.invalidParameter("Attention: scale \(scale) must be finite and > 0")
        }
        guard options.softcap.isFinite, options.softcap >= 0 else {
            throw LayerKitError.invalidParameter("Attention: softcap \(options.softcap) must be finite and >= 0")
        }
        guard options.window.left >= -1, options.window.right >= -1 else {
            throw LayerKitError.invalidParameter("Attention: left_window_size \(options.window.left) and "
                                                 + "right_window_size \(options.window.right) must be -1 or more")
        }
        if let lengths = options.nonpadLengths, let negative = lengths.first(where: { $0 < 0 }) {
            throw LayerKitError.invalidParameter("Attention: nonpad_kv_seqlen \(negative) is negative")
        }
        guard (1...4).contains(options.outputCount) else {
            throw LayerKitError.invalidParameter("Attention: \(options.outputCount) outputs, expected 1 to 4")
        }
        self.options = options
    }

    public var layerName: String { "Attention" }

    /// The sizes of one run, from the input shapes.
    struct Geometry {
        var batch = 0, qHeads = 0, kvHeads = 0
        var qLength = 0, kvLength = 0, pastLength = 0
        /// The head size of Q and K, and of V.
        var headSize = 0, valueHeadSize = 0
        /// Whether Q, K and V are 3-D (heads packed in the last axis).
        var packed = false
        /// The mask's shape right-aligned to rank 4 (nil: no mask).
        var mask: [Int]?
        var totalLength: Int { pastLength + kvLength }
    }

    /// The geometry of inputs of `shapes`; throws, naming the inputs, when
    /// they do not fit together.
    func geometry(_ shapes: [[Int]]) throws -> Geometry {
        let expected = 3 + (options.hasMask ? 1 : 0) + (options.hasPast ? 2 : 0)
        try LayerChecks.requireInputCount(shapes, expected, layer: layerName)
        let (q, k, v) = (shapes[0], shapes[1], shapes[2])
        func fail(_ message: String) -> LayerKitError { .shapeMismatch("\(layerName): \(message)") }
        let described = "Q \(Tensor.describe(q)), K \(Tensor.describe(k)) and V \(Tensor.describe(v))"
        guard (q.count == 3 || q.count == 4), k.count == q.count, v.count == q.count else {
            throw fail("\(described) must all be 3-D or all 4-D")
        }
        var g = Geometry()
        g.batch = q[0]
        guard k[0] == g.batch, v[0] == g.batch else { throw fail("\(described) have different batch sizes") }
        if q.count == 3 {
            guard let qHeads = options.qHeads, let kvHeads = options.kvHeads else {
                throw fail("3-D inputs need q_num_heads and kv_num_heads")
            }
            guard q[2] % qHeads == 0, k[2] % kvHeads == 0, v[2] % kvHeads == 0 else {
                throw fail("\(described): q_num_heads \(qHeads) must divide Q's hidden size and kv_num_heads "
                           + "\(kvHeads) K's and V's")
            }
            g.packed = true
            (g.qHeads, g.kvHeads, g.qLength, g.kvLength) = (qHeads, kvHeads, q[1], k[1])
            (g.headSize, g.valueHeadSize) = (q[2] / qHeads, v[2] / kvHeads)
            guard k[2] / kvHeads == g.headSize else {
                throw fail("\(described): the query head size \(g.headSize) differs from the key head size \(k[2] / kvHeads)")
            }
            guard v[1] == g.kvLength else { throw fail("\(described): K and V have different sequence lengths") }
        } else {
            (g.qHeads, g.kvHeads, g.qLength, g.kvLength) = (q[1], k[1], q[2], k[2])
            (g.headSize, g.valueHeadSize) = (q[3], v[3])
            guard v[1] == g.kvHeads, v[2] == g.kvLength else {
                throw fail("\(described): K and V have different head counts or sequence lengths")
            }
            guard k[3] == g.headSize else {
                throw fail("\(described): the query head size \(g.headSize) differs from the key head size \(k[3])")
            }
            for (name, given, actual) in [("q_num_heads", options.qHeads, g.qHeads), ("kv_num_heads", options.kvHeads, g.kvHeads)] {
                if let given, given != actual { throw fail("\(name) \(given) does not match the \(actual) heads of \(described)") }
            }
        }
        guard g.kvHeads > 0, g.qHeads % g.kvHeads == 0 else {
            throw fail("the \(g.kvHeads) key/value heads do not divide the \(g.qHeads) query heads")
        }
        if options.hasPast {
            let (pastKey, pastValue) = (shapes[expected - 2], shapes[expected - 1])
            guard pastKey.count == 4, pastValue.count == 4, pastKey[0] == g.batch, pastValue[0] == g.batch,
                  pastKey[1] == g.kvHeads, pastValue[1] == g.kvHeads, pastKey[2] == pastValue[2],
                  pastKey[3] == g.headSize, pastValue[3] == g.valueHeadSize else {
                throw fail("past_key \(Tensor.describe(pastKey)) and past_value \(Tensor.describe(pastValue)) must be "
                           + "[batch, kv_num_heads, past length, head size] = "
                           + "\(Tensor.describe([g.batch, g.kvHeads, pastKey.count == 4 ? pastKey[2] : 0, g.headSize])) "
                           + "and \(Tensor.describe([g.batch, g.kvHeads, pastKey.count == 4 ? pastKey[2] : 0, g.valueHeadSize]))")
            }
            g.pastLength = pastKey[2]
        }
        if options.hasMask {
            let mask = shapes[3]
            let target = [g.batch, g.qHeads, g.qLength]
            guard (1...4).contains(mask.count),
                  zip(mask.dropLast().reversed(), target.reversed()).allSatisfy({ $0 == $1 || $0 == 1 }) else {
                throw fail("attn_mask \(Tensor.describe(mask)) does not broadcast to [batch, q_num_heads, "
                           + "q_sequence_length, keys] = \(Tensor.describe(target + [g.totalLength]))")
            }
            g.mask = Array(repeating: 1, count: 4 - mask.count) + mask
        }
        if let mask = g.mask, mask[3] > g.totalLength {
            throw fail("attn_mask \(Tensor.describe(mask)) covers \(mask[3]) keys; there are \(g.totalLength)")
        }
        if let lengths = options.nonpadLengths {
            guard lengths.count == g.batch else {
                throw fail("nonpad_kv_seqlen has \(lengths.count) values for a batch of \(g.batch)")
            }
            if let long = lengths.first(where: { $0 > g.totalLength }) {
                throw fail("nonpad_kv_seqlen \(long) is past the \(g.totalLength) keys")
            }
        }
        return g
    }

    /// Y (Q's rank), the present key and value, the scores, as many as
    /// `Options.outputCount`.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        let g = try geometry(inputShapes)
        let y = g.packed ? [g.batch, g.qLength, g.qHeads * g.valueHeadSize] : [g.batch, g.qHeads, g.qLength, g.valueHeadSize]
        let shapes = [y, [g.batch, g.kvHeads, g.totalLength, g.headSize], [g.batch, g.kvHeads, g.totalLength, g.valueHeadSize],
                      [g.batch, g.qHeads, g.qLength, g.totalLength]]
        for shape in shapes { _ = try Tensor.elementCount(of: shape) }
        return Array(shapes.prefix(options.outputCount))
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let g = try geometry(inputs.map(\.shape))
        let shapes = try outputShapes(forInputShapes: inputs.map(\.shape))
        guard outputs.map(\.shape) == shapes else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): the outputs must be of shapes \(shapes.map(Tensor.describe).joined(separator: ", "))")
        }
        let mask = options.hasMask ? inputs[3] : nil
        let past = options.hasPast ? (key: inputs[inputs.count - 2], value: inputs[inputs.count - 1]) : nil
        // Keys and values as the kernel reads them: the inputs themselves, or
        // past and new concatenated (into the present outputs when listed).
        var keys = HeadLayout(tensor: inputs[1], heads: g.kvHeads, length: g.kvLength, size: g.headSize, packed: g.packed)
        var values = HeadLayout(tensor: inputs[2], heads: g.kvHeads, length: g.kvLength, size: g.valueHeadSize,
                                packed: g.packed)
        let presentKey = outputs.count > 1 ? outputs[1] : nil, presentValue = outputs.count > 2 ? outputs[2] : nil
        if past != nil || presentKey != nil {
            let key = try presentKey ?? Tensor(shape: [g.batch, g.kvHeads, g.totalLength, g.headSize])
            keys.concatenate(after: past?.key, batch: g.batch, pastLength: g.pastLength, into: key)
            keys = HeadLayout(tensor: key, heads: g.kvHeads, length: g.totalLength, size: g.headSize, packed: false)
        }
        if past != nil || presentValue != nil {
            let value = try presentValue ?? Tensor(shape: [g.batch, g.kvHeads, g.totalLength, g.valueHeadSize])
            values.concatenate(after: past?.value, batch: g.batch, pastLength: g.pastLength, into: value)
            values = HeadLayout(tensor: value, heads: g.kvHeads, length: g.totalLength, size: g.valueHeadSize, packed: false)
        }
        let queries = HeadLayout(tensor: inputs[0], heads: g.qHeads, length: g.qLength, size: g.headSize, packed: g.packed)
        let y = HeadLayout(tensor: outputs[0], heads: g.qHeads, length: g.qLength, size: g.valueHeadSize, packed: g.packed)
        let kernel = Kernel(geometry: g, options: options, queries: queries, keys: keys, values: values, y: y,
                            mask: mask, scores: outputs.count > 3 ? outputs[3] : nil)
        try kernel.run()
    }
}

extension Attention {
    /// Where the rows of each head of a Q, K, V or Y tensor are: 4-D
    /// `[batch, heads, length, size]`, or 3-D `[batch, length, heads * size]`.
    struct HeadLayout: Sendable {
        let tensor: Tensor
        let heads: Int, length: Int, size: Int
        let packed: Bool

        /// The distance between consecutive rows of one head.
        var rowStride: Int { packed ? heads * size : size }

        /// The first row of `head` of batch item `batch`.
        func rows(_ batch: Int, _ head: Int) -> UnsafeMutablePointer<Float> {
            tensor.dataPointer + (packed ? batch * length * heads * size + head * size
                                         : (batch * heads + head) * length * size)
        }

        /// Writes `past` (4-D, `pastLength` rows a head) and then these rows,
        /// head by head, into the 4-D `target`.
        func concatenate(after past: Tensor?, batch: Int, pastLength: Int, into target: Tensor) {
            let total = pastLength + length
            for b in 0..<batch {
                for h in 0..<heads {
                    let destination = target.dataPointer + (b * heads + h) * total * size
                    if let past {
                        destination.update(from: past.dataPointer + (b * heads + h) * pastLength * size,
                                           count: pastLength * size)
                    }
                    let source = rows(b, h)
                    for i in 0..<length {
                        (destination + (pastLength + i) * size).update(from: source + i * rowStride, count: size)
                    }
                }
            }
        }
    }
}
