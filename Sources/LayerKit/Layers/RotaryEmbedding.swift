/// ONNX RotaryEmbedding (opset 23): rotary position embeddings (RoPE). Per
/// batch item, position and head, the first `rotaryDimension` values of the
/// head's vector are rotated as `rotaryDimension / 2` pairs, pair `k` by
/// the angle whose cosine and sine are `cos[k]` and `sin[k]` at the token's
/// position: `(x1, x2) -> (cos x1 - sin x2, sin x1 + cos x2)`. A pair is
/// `(x[k], x[k + half])`, or `(x[2k], x[2k + 1])` when interleaved; the
/// values past the rotary dimension are copied.
///
/// Inputs: X, 4-D `[batch, heads, sequence, head size]` or 3-D
/// `[batch, sequence, heads * head size]` (with `heads`); the cos and sin
/// caches, `[max position + 1, half]` read at `positions` (ONNX's
/// `position_ids`, `[batch, sequence]`, known when the layer is made), or
/// `[batch, sequence, half]` without them. On the CPU only.
public final class RotaryEmbedding: Layer, Sendable {
    /// Whether pairs are adjacent values rather than the two halves.
    public let interleaved: Bool
    /// The head count of a 3-D input (required there).
    public let heads: Int?
    /// How many leading values of each head are rotated; 0: all of them.
    public let rotaryDimension: Int
    /// Per batch item and position, the row of the caches to read; nil:
    /// the caches have one row per batch item and position.
    public let positions: [Int]?

    /// Throws for a head count below 1, a negative or odd rotary dimension,
    /// or a negative position.
    public init(interleaved: Bool = false, heads: Int? = nil, rotaryDimension: Int = 0, positions: [Int]? = nil) throws {
        if let heads, heads < 1 { throw LayerKitError.invalidParameter("RotaryEmbedding: num_heads \(heads) must be >= 1") }
        guard rotaryDimension >= 0, rotaryDimension % 2 == 0 else {
            throw LayerKitError.invalidParameter(
                "RotaryEmbedding: rotary_embedding_dim \(rotaryDimension) must be even and >= 0")
        }
        if let negative = positions?.first(where: { $0 < 0 }) {
            throw LayerKitError.invalidParameter("RotaryEmbedding: position_ids holds \(negative)")
        }
        (self.interleaved, self.heads, self.rotaryDimension, self.positions) = (interleaved, heads, rotaryDimension, positions)
    }

    public var layerName: String { "RotaryEmbedding" }

    /// The sizes of one run: batch, sequence, heads, head size, rotated values.
    struct Geometry {
        var batch = 0, length = 0, heads = 0, headSize = 0, rotated = 0
        /// Whether X is 3-D (heads packed in the last axis).
        var packed = false
    }

    /// The geometry of inputs of `shapes`; throws when X, the caches and
    /// the positions do not fit together.
    func geometry(_ shapes: [[Int]]) throws -> Geometry {
        try LayerChecks.requireInputCount(shapes, 3, layer: layerName)
        let (x, cos, sin) = (shapes[0], shapes[1], shapes[2])
        func fail(_ message: String) -> LayerKitError { .shapeMismatch("\(layerName): \(message)") }
        var g = Geometry()
        switch x.count {
        case 4:
            (g.batch, g.heads, g.length, g.headSize) = (x[0], x[1], x[2], x[3])
        case 3:
            guard let heads else { throw fail("a 3-D input \(Tensor.describe(x)) needs num_heads") }
            guard x[2] % heads == 0 else { throw fail("num_heads \(heads) does not divide the hidden size of \(Tensor.describe(x))") }
            (g.batch, g.length, g.heads, g.headSize, g.packed) = (x[0], x[1], heads, x[2] / heads, true)
        default:
            throw fail("input \(Tensor.describe(x)) must be 3-D or 4-D")
        }
        g.rotated = rotaryDimension == 0 ? g.headSize : rotaryDimension
        guard g.rotated <= g.headSize, g.rotated % 2 == 0 else {
            throw fail("the rotary dimension \(g.rotated) must be even and at most the head size \(g.headSize)")
        }
        let half = g.rotated / 2
        guard cos == sin else { throw fail("cos_cache \(Tensor.describe(cos)) and sin_cache \(Tensor.describe(sin)) differ") }
        if let positions {
            guard cos.count == 2, cos[1] == half else {
                throw fail("with position_ids, cos_cache \(Tensor.describe(cos)) must be [max position + 1, \(half)]")
            }
            guard positions.count == g.batch * g.length else {
                throw fail("position_ids has \(positions.count) values for \(g.batch) x \(g.length) tokens")
            }
            if let far = positions.first(where: { $0 >= cos[0] }) {
                throw fail("position_ids holds \(far), past the \(cos[0]) rows of cos_cache")
            }
        } else {
            guard cos == [g.batch, g.length, half] else {
                throw fail("without position_ids, cos_cache \(Tensor.describe(cos)) must be "
                           + "\(Tensor.describe([g.batch, g.length, half]))")
            }
        }
        return g
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        _ = try geometry(inputShapes)
        return [inputShapes[0]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let g = try geometry(inputs.map(\.shape))
        try LayerChecks.requireOutput(outputs, inputs[0].shape, layer: layerName)
        let (x, cos, sin, y) = (inputs[0], inputs[1], inputs[2], outputs[0])
        let (half, interleaved, positions) = (g.rotated / 2, interleaved, positions)
        let vectors = g.batch * g.length * g.heads
        guard g.headSize > 0 else { return }
        forEachChunk(count: vectors, chunkSize: max(1, defaultChunkSize / g.headSize), threadCount: CPUThreads.current) { range in
            for vector in range {
                // Vectors in [batch, position, head] order, whatever X's layout.
                let (token, head) = vector.quotientAndRemainder(dividingBy: g.heads)
                let (b, position) = token.quotientAndRemainder(dividingBy: g.length)
                let offset = g.packed ? token * g.heads * g.headSize + head * g.headSize
                                      : ((b * g.heads + head) * g.length + position) * g.headSize
                let (source, target) = (x.dataPointer + offset, y.dataPointer + offset)
                let row = (positions?[token] ?? token) * half
                for k in 0..<half {
                    let (first, second) = interleaved ? (2 * k, 2 * k + 1) : (k, k + half)
                    let (c, s, x1, x2) = (cos[row + k], sin[row + k], source[first], source[second])
                    target[first] = c * x1 - s * x2
                    target[second] = s * x1 + c * x2
                }
                (target + g.rotated).update(from: source + g.rotated, count: g.headSize - g.rotated)
            }
        }
    }
}
