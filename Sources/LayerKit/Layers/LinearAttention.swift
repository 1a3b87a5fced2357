import Foundation

/// ONNX LinearAttention (opset 27): attention as a recurrence over a
/// `[dk, dv]` state per batch item and key/value head, token by token:
///
/// - `gated` and `gated_delta`: the state decays, `S *= exp(decay)` (one
///   log-space gate per head, or one per key dimension, scaling that row);
/// - `delta` and `gated_delta`: the value is corrected by what the state
///   already gives for the key, `v = beta * (v - Sᵀ k)`;
/// - every rule: `S += k vᵀ`, and each query head of the group reads
///   `y = scale * Sᵀ q` (`scale` 0: `1 / sqrt(dk)`).
///
/// Inputs: query, key, value, 3-D `[batch, tokens, heads * size]`, then the
/// optional past state `[batch, kvHeads, dk, dv]`, decay
/// `[batch, tokens, kvHeads]` or `[batch, tokens, kvHeads * dk]` and beta
/// `[batch, tokens, kvHeads]` or `[batch, tokens, 1]`, as the rule needs.
/// Outputs: Y `[batch, tokens, qHeads * dv]` and the present state. On the
/// CPU only, in float32, a thread per batch item and key/value head.
public final class LinearAttention: Layer, Sendable {
    /// ONNX's `update_rule`.
    public enum Rule: String, Sendable {
        case linear, gated, delta
        case gatedDelta = "gated_delta"

        /// Whether the state decays by the decay input.
        var gates: Bool { self == .gated || self == .gatedDelta }
        /// Whether values are delta-corrected by beta.
        var corrects: Bool { self == .delta || self == .gatedDelta }
    }

    public let rule: Rule
    public let qHeads: Int, kvHeads: Int
    /// The factor on the read; 0: `1 / sqrt(dk)`.
    public let scale: Float
    /// Whether the past state is given (input 3).
    public let hasPast: Bool

    /// Throws unless the head counts are positive, the key/value heads divide
    /// the query heads and `scale` is finite.
    public init(rule: Rule, qHeads: Int, kvHeads: Int, scale: Float = 0, hasPast: Bool) throws {
        guard qHeads > 0, kvHeads > 0, qHeads % kvHeads == 0 else {
            throw LayerKitError.invalidParameter("LinearAttention: q_num_heads \(qHeads) must be a positive multiple of "
                                                 + "kv_num_heads \(kvHeads)")
        }
        guard scale.isFinite else { throw LayerKitError.invalidParameter("LinearAttention: scale must be finite, got \(scale)") }
        (self.rule, self.qHeads, self.kvHeads, self.scale, self.hasPast) = (rule, qHeads, kvHeads, scale, hasPast)
    }

    public var layerName: String { "LinearAttention" }

    /// The sizes of one run.
    struct Geometry {
        var batch = 0, tokens = 0, keySize = 0, valueSize = 0
        /// Whether the decay has one value per key dimension (else one a head).
        var decayPerKey = false
        /// Whether beta has one value a head (else one for all heads).
        var betaPerHead = false
    }

    func geometry(_ shapes: [[Int]]) throws -> Geometry {
        let count = 3 + (hasPast ? 1 : 0) + (rule.gates ? 1 : 0) + (rule.corrects ? 1 : 0)
        try LayerChecks.requireInputCount(shapes, count, layer: layerName)
        func fail(_ message: String) -> LayerKitError { .shapeMismatch("\(layerName): \(message)") }
        let (q, k, v) = (shapes[0], shapes[1], shapes[2])
        let described = "query \(Tensor.describe(q)), key \(Tensor.describe(k)) and value \(Tensor.describe(v))"
        guard q.count == 3, k.count == 3, v.count == 3, k[0] == q[0], v[0] == q[0], k[1] == q[1], v[1] == q[1] else {
            throw fail("\(described) must be 3-D [batch, tokens, heads * size] of one batch and token count")
        }
        guard q[2] % qHeads == 0, k[2] == q[2] / qHeads * kvHeads, v[2] % kvHeads == 0 else {
            throw fail("\(described) do not split into \(qHeads) query and \(kvHeads) key/value heads of one key size")
        }
        var g = Geometry()
        (g.batch, g.tokens, g.keySize, g.valueSize) = (q[0], q[1], q[2] / qHeads, v[2] / kvHeads)
        var next = 3
        if hasPast {
            let state = [g.batch, kvHeads, g.keySize, g.valueSize]
            guard shapes[next] == state else {
                throw fail("past_state \(Tensor.describe(shapes[next])) must be \(Tensor.describe(state))")
            }
            next += 1
        }
        if rule.gates {
            let decay = shapes[next]
            guard decay.count == 3, decay[0] == g.batch, decay[1] == g.tokens,
                  decay[2] == kvHeads || decay[2] == kvHeads * g.keySize else {
                throw fail("decay \(Tensor.describe(decay)) must be [\(g.batch), \(g.tokens), \(kvHeads)] or "
                           + "[\(g.batch), \(g.tokens), \(kvHeads * g.keySize)]")
            }
            g.decayPerKey = decay[2] == kvHeads * g.keySize && g.keySize != 1
            next += 1
        }
        if rule.corrects {
            let beta = shapes[next]
            guard beta.count == 3, beta[0] == g.batch, beta[1] == g.tokens, beta[2] == kvHeads || beta[2] == 1 else {
                throw fail("beta \(Tensor.describe(beta)) must be [\(g.batch), \(g.tokens), \(kvHeads)] or "
                           + "[\(g.batch), \(g.tokens), 1]")
            }
            g.betaPerHead = beta[2] == kvHeads && kvHeads != 1
        }
        return g
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        let g = try geometry(inputShapes)
        return [[g.batch, g.tokens, qHeads * g.valueSize], [g.batch, kvHeads, g.keySize, g.valueSize]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let g = try geometry(inputs.map(\.shape))
        let shapes = try outputShapes(forInputShapes: inputs.map(\.shape))
        guard outputs.map(\.shape) == shapes else {
            throw LayerKitError.shapeMismatch("\(layerName): the outputs must be of shapes "
                                              + shapes.map(Tensor.describe).joined(separator: ", "))
        }
        let (q, k, v, y, present) = (inputs[0], inputs[1], inputs[2], outputs[0], outputs[1])
        var next = 3
        func optional(_ given: Bool) -> Tensor? {
            guard given else { return nil }
            defer { next += 1 }
            return inputs[next]
        }
        let (past, decay, beta) = (optional(hasPast), optional(rule.gates), optional(rule.corrects))
        let (dk, dv, qHeads, kvHeads) = (g.keySize, g.valueSize, qHeads, kvHeads)
        let group = qHeads / kvHeads
        let scale = scale == 0 ? 1 / Float(dk).squareRoot() : scale
        forEachChunk(count: g.batch * kvHeads, chunkSize: 1, threadCount: CPUThreads.current) { range in
            var corrected = [Float](repeating: 0, count: dv)
            for item in range {
                let (b, head) = item.quotientAndRemainder(dividingBy: kvHeads)
                // The state, [dk, dv], kept in the present output.
                let state = present.dataPointer + item * dk * dv
                if let past { state.update(from: past.dataPointer + item * dk * dv, count: dk * dv) } else {
                    state.update(repeating: 0, count: dk * dv)
                }
                for t in 0..<g.tokens {
                    let token = b * g.tokens + t
                    let key = k.dataPointer + token * kvHeads * dk + head * dk
                    let value = v.dataPointer + token * kvHeads * dv + head * dv
                    if let decay {
                        let gates = decay.dataPointer + token * kvHeads * (g.decayPerKey ? dk : 1)
                        for d in 0..<dk {
                            let factor = exp(g.decayPerKey ? gates[head * dk + d] : gates[head])
                            for m in 0..<dv { state[d * dv + m] *= factor }
                        }
                    }
                    for m in 0..<dv { corrected[m] = value[m] }
                    if let beta {
                        let rate = beta.dataPointer[token * (g.betaPerHead ? kvHeads : 1) + (g.betaPerHead ? head : 0)]
                        for m in 0..<dv {
                            var retrieved: Float = 0
                            for d in 0..<dk { retrieved += state[d * dv + m] * key[d] }
                            corrected[m] = rate * (value[m] - retrieved)
                        }
                    }
                    for d in 0..<dk {
                        for m in 0..<dv { state[d * dv + m] += key[d] * corrected[m] }
                    }
                    for h in head * group..<(head + 1) * group {
                        let query = q.dataPointer + token * qHeads * dk + h * dk
                        let out = y.dataPointer + token * qHeads * dv + h * dv
                        for m in 0..<dv {
                            var sum: Float = 0
                            for d in 0..<dk { sum += query[d] * state[d * dv + m] }
                            out[m] = scale * sum
                        }
                    }
                }
            }
        }
    }
}
