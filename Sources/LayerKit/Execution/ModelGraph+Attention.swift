/// Scaled dot-product attention as the exporters decompose it (PyTorch's
/// SDPA, `transformers`' eager attention), made one `Attention` step, whose
/// CPU kernel runs tiles of query rows against blocks of keys with an
/// online softmax: the `[B, H, Sq, Sk]` score matrix (and each pass over it:
/// the scale, the mask, the softmax, its NaN guard) is never written.
///
/// What fuses, every value in between read only by the next node and not a
/// graph output, all standard ONNX nodes on float32 values:
/// - `MatMul(Q', Kt')`, Q' `[B, H, Sq, D]` and Kt' `[B, H, D, Sk]`, where
///   Q' is Q or `Mul(Q, c)` and Kt' is `Transpose(X)` or `Mul(Transpose(X), c)`,
///   the Transpose's perm with its last two axes swapped taking X to
///   K `[B, H, Sk, D]` (BERT's `[0, 2, 3, 1]` of `[B, Sk, H, D]`);
/// - then an optional `Mul` by a scalar constant or `Div` by one (the older
///   exports' `1 / sqrt(d)` after the product);
/// - then an optional `Add` of a float mask broadcast to the scores (its
///   last axis the keys', each other axis 1 or the scores'), either order;
/// - `Softmax` along the last axis;
/// - optionally `IsNaN(P)` and `Where(isNaN, 0, P)` (a fully masked row, all
///   -inf, is zero rather than NaN);
/// - `MatMul(P, V)`, V `[B, H, Sk, Dv]`.
///
/// The scale is the product of the constants (`c1 * c2 / c3`), and must be
/// finite and positive. Without the NaN guard a fully masked row is NaN, as
/// Softmax makes it (`Attention.Options.maskedRowsAreNaN`). Any other form
/// keeps its steps.
extension ModelGraph {
    /// Replaces each decomposed attention by one `layerkit.Attention` step
    /// at the last MatMul's place, named after the scores MatMul's node; the
    /// keys' Transpose stays a step (K in `[B, H, Sk, D]` is one copy of the
    /// keys, not of the scores) with its perm changed, or goes when K is X.
    mutating func fuseAttention() {
        let (readers, isOutput) = self.readers()
        let scan = AttentionScan(graph: self, readers: readers, isOutput: isOutput, makers: makers())
        var removed = Set<Int>()
        for index in steps.indices where steps[index].layer is Softmax {
            guard let match = scan.match(softmax: index), removed.isDisjoint(with: match.fused + [match.last]) else { continue }
            var options = Attention.Options()
            options.scale = Float(match.scale)
            options.hasMask = match.mask != nil
            options.maskedRowsAreNaN = !match.guarded
            let transpose = steps[match.transpose]
            let kShape = Self.swappingLastAxes(values[transpose.outputs[0]].shape)
            // V and the mask, the inputs after Q and K.
            let rest = [match.values] + (match.mask.map { [$0] } ?? [])
            let shapes = [values[match.query].shape, kShape] + rest.map { values[$0].shape }
            guard let attention = try? Attention(options: options),
                  (try? attention.outputShapes(forInputShapes: shapes)) == [values[steps[match.last].outputs[0]].shape]
            else { continue }
            var keys = match.x
            if match.keyPerm != Array(0..<4) {
                guard let layer = try? TransposeLayer(perm: match.keyPerm) else { continue }
                keys = addValue(values[transpose.outputs[0]].name, shape: kShape)
                steps[match.transpose] = Step(name: transpose.name, opType: transpose.opType, domain: transpose.domain,
                                              layer: layer, inputs: [match.x], outputs: [keys])
            } else {
                removed.insert(match.transpose)
            }
            let scores = steps[match.scores]
            steps[match.last] = Step(name: scores.name, opType: "Attention", domain: "layerkit", layer: attention,
                                     inputs: [match.query, keys] + rest, outputs: steps[match.last].outputs)
            removed.formUnion(match.fused)
        }
        removeSteps(at: removed)
    }

    /// A shape with its last two extents swapped.
    static func swappingLastAxes(_ shape: [Int]) -> [Int] {
        guard shape.count >= 2 else { return shape }
        var swapped = shape
        swapped.swapAt(shape.count - 1, shape.count - 2)
        return swapped
    }
}

/// The matching half of `ModelGraph.fuseAttention()`: walks from a Softmax
/// step back to the scores MatMul and on to the product with V, checking
/// each condition; reads the graph, changes nothing.
private struct AttentionScan {
    let graph: ModelGraph
    /// The steps reading each value, and whether it is a graph output.
    let readers: [[Int]]
    let isOutput: [Bool]
    /// The step making each value.
    let makers: [Int: Int]

    /// One decomposed attention.
    struct Match {
        /// Q, X (the keys' Transpose's input), V and the mask.
        var query = 0, x = 0, values = 0
        var mask: Int?
        /// The keys' Transpose step, and the perm taking X to K.
        var transpose = 0
        var keyPerm: [Int] = []
        /// The scores MatMul, the product with V (where the fused step goes).
        var scores = 0, last = 0
        /// The steps the fused one replaces (the Transpose aside).
        var fused: [Int] = []
        /// The product of the scale constants.
        var scale = 1.0
        /// Whether IsNaN and Where zero the NaN rows of the probabilities.
        var guarded = false
    }

    func match(softmax index: Int) -> Match? {
        let softmax = graph.steps[index]
        guard let layer = softmax.layer as? Softmax, layer.kind == .softmax, standard(softmax),
              softmax.inputs.count == 1, softmax.outputs.count == 1 else { return nil }
        let input = softmax.inputs[0]
        let shape = graph.values[input].shape
        // The last axis alone (an opset < 13 Softmax on the last axis flattens nothing).
        guard shape.count == 4, layer.axis == 3, isFloat(input), onlyReader(of: input) == index else { return nil }
        var match = Match()
        match.fused = [index]
        // The probabilities' readers: MatMul(P, V), or IsNaN and Where(isNaN, 0, P) then the MatMul.
        guard let probabilities = probabilitiesProduct(softmax.outputs[0], into: &match) else { return nil }
        let product = graph.steps[probabilities]
        guard product.layer.map(isMatMul) == true, product.inputs.count == 2, product.outputs.count == 1 else { return nil }
        match.last = probabilities
        match.values = product.inputs[1]
        // Back from the Softmax's input: the mask's Add, a scale, the scores MatMul.
        var current = input
        if let add = maker(of: current), let binary = graph.steps[add].layer as? BinaryLayer, binary.operation == .add,
           binary.inputCount == 2, !binary.average, standard(graph.steps[add]), graph.steps[add].inputs.count == 2 {
            let operands = graph.steps[add].inputs
            guard let scores = operands.first(where: { scoresChain(ending: $0) }), operands.filter({ $0 == scores }).count == 1,
                  let mask = operands.first(where: { $0 != scores }), isFloat(mask), onlyReader(of: scores) == add,
                  graph.values[scores].shape == shape, broadcastsAsMask(graph.values[mask].shape, to: shape) else { return nil }
            match.mask = mask
            match.fused.append(add)
            current = scores
        }
        if let (step, factor) = scaling(current), let next = graph.steps[step].inputs.first(where: { graph.values[$0].constant == nil }),
           onlyReader(of: next) == step {
            match.scale *= factor
            match.fused.append(step)
            current = next
        }
        guard let scores = maker(of: current), graph.steps[scores].layer.map(isMatMul) == true, standard(graph.steps[scores]),
              graph.steps[scores].inputs.count == 2, graph.steps[scores].outputs == [current] else { return nil }
        match.scores = scores
        match.fused.append(scores)
        let q = unscaled(graph.steps[scores].inputs[0], readBy: scores, into: &match)
        let kt = unscaled(graph.steps[scores].inputs[1], readBy: scores, into: &match)
        // Kt = Transpose(X): K = Transpose(X) by the perm with its last two axes swapped.
        guard let transpose = maker(of: kt), let perm = (graph.steps[transpose].layer as? TransposeLayer)?.perm,
              perm.count == 4, standard(graph.steps[transpose]), graph.steps[transpose].inputs.count == 1,
              graph.steps[transpose].outputs == [kt], onlyReader(of: kt) != nil else { return nil }
        match.transpose = transpose
        match.x = graph.steps[transpose].inputs[0]
        match.keyPerm = ModelGraph.swappingLastAxes(perm)
        match.query = q
        // Shapes: Q [B, H, Sq, D], Kt [B, H, D, Sk], V [B, H, Sk, Dv], no broadcasting between them.
        let (qs, ks, vs) = (graph.values[q].shape, graph.values[kt].shape, graph.values[match.values].shape)
        guard qs.count == 4, ks.count == 4, vs.count == 4, qs[0] == ks[0], qs[1] == ks[1], qs[3] == ks[2],
              vs[0] == qs[0], vs[1] == qs[1], vs[2] == ks[3], shape == [qs[0], qs[1], qs[2], ks[3]],
              [q, kt, match.values].allSatisfy(isFloat) else { return nil }
        guard match.scale.isFinite, match.scale > 0, Float(match.scale).isFinite, Float(match.scale) > 0 else { return nil }
        return match
    }

    /// The step multiplying the probabilities P by V, after the optional
    /// IsNaN / Where guard (whose steps join `match.fused`).
    private func probabilitiesProduct(_ p: Int, into match: inout Match) -> Int? {
        let next = readers[p]
        guard !isOutput[p] else { return nil }
        if next.count == 1, graph.steps[next[0]].inputs.first == p { return next[0] }
        guard next.count == 2,
              let isNaN = next.first(where: { graph.steps[$0].opType == "IsNaN" }),
              let whereStep = next.first(where: { $0 != isNaN }),
              standard(graph.steps[isNaN]), graph.steps[isNaN].layer != nil, graph.steps[isNaN].inputs == [p],
              graph.steps[isNaN].outputs.count == 1, onlyReader(of: graph.steps[isNaN].outputs[0]) == whereStep,
              zeroes(whereStep, where: graph.steps[isNaN].outputs[0], else: p) else { return nil }
        let guarded = graph.steps[whereStep].outputs[0]
        guard let product = onlyReader(of: guarded), graph.steps[product].inputs.first == guarded else { return nil }
        match.fused += [isNaN, whereStep]
        match.guarded = true
        return product
    }

    /// The operand of the scores MatMul `scores` without its Mul by a
    /// constant, when it has one that only the MatMul reads (its factor and
    /// step joining `match`); else the operand itself.
    private func unscaled(_ operand: Int, readBy scores: Int, into match: inout Match) -> Int {
        guard let (step, factor) = scaling(operand),
              graph.steps[step].layer.map({ ($0 as? BinaryLayer)?.operation == .mul }) == true,
              onlyReader(of: operand) == scores,
              let input = graph.steps[step].inputs.first(where: { graph.values[$0].constant == nil }) else { return operand }
        match.scale *= factor
        match.fused.append(step)
        return input
    }

    /// Whether the step is `Where(condition, 0, p)` of p's shape: a
    /// `WhereLayer` reading the zero as a constant value, or, when the
    /// condition is a bool value, a typed step knowing it.
    private func zeroes(_ step: Int, where condition: Int, else p: Int) -> Bool {
        let s = graph.steps[step]
        guard s.opType == "Where", standard(s), s.outputs.count == 1,
              graph.values[s.outputs[0]].shape == graph.values[p].shape else { return false }
        let zero: Tensor?
        switch s.layer {
        case is WhereLayer:
            guard s.inputs.count == 3, s.inputs[0] == condition, s.inputs[2] == p else { return false }
            zero = graph.values[s.inputs[1]].constant
        case let typed as TypedStep:
            guard typed.runtimeInputs == [0, 2], s.inputs == [condition, p] else { return false }
            zero = try? typed.node.constant(1, "X")
        default:
            return false
        }
        return zero.map { $0.elements.allSatisfy { $0 == 0 } } == true
    }

    /// Whether `value` is made by a MatMul, possibly through a scaling
    /// step: the scores' side of the mask's Add.
    private func scoresChain(ending value: Int) -> Bool {
        var current = value
        if let (step, _) = scaling(current), let next = graph.steps[step].inputs.first(where: { graph.values[$0].constant == nil }) {
            current = next
        }
        return maker(of: current).flatMap { graph.steps[$0].layer }.map(isMatMul) == true
    }

    /// The step making `value` as a Mul by a one-element constant (either
    /// side) or a Div by one, and the factor it applies; the other operand's
    /// shape is the output's.
    private func scaling(_ value: Int) -> (step: Int, factor: Double)? {
        guard let step = maker(of: value), standard(graph.steps[step]),
              let binary = graph.steps[step].layer as? BinaryLayer, binary.inputCount == 2, !binary.average,
              graph.steps[step].inputs.count == 2, graph.steps[step].outputs == [value] else { return nil }
        let inputs = graph.steps[step].inputs
        let constants = inputs.map { graph.values[$0].constant.flatMap { $0.count == 1 ? Double($0.elements[0]) : nil } }
        switch binary.operation {
        case .mul:
            guard let k = constants.firstIndex(where: { $0 != nil }), let factor = constants[k],
                  graph.values[inputs[1 - k]].constant == nil,
                  graph.values[inputs[1 - k]].shape == graph.values[value].shape else { return nil }
            return (step, factor)
        case .div:
            guard constants[0] == nil, let divisor = constants[1], divisor != 0,
                  graph.values[inputs[0]].shape == graph.values[value].shape else { return nil }
            return (step, 1 / divisor)
        default:
            return nil
        }
    }

    /// Whether a mask of `mask`'s shape adds to scores of `scores`' shape
    /// as Attention adds it: rank 4 at most, the keys' extent in full, each
    /// other axis 1 or the scores'.
    private func broadcastsAsMask(_ mask: [Int], to scores: [Int]) -> Bool {
        guard (1...4).contains(mask.count), mask.last == scores.last else { return false }
        return zip(mask.reversed(), scores.reversed()).allSatisfy { $0 == $1 || $0 == 1 }
    }

    private func isMatMul(_ layer: Layer) -> Bool { (layer as? MatMulLayer).map { !$0.isGemm } == true }

    private func standard(_ step: ModelGraph.Step) -> Bool { ModelGraph.isStandard(step) }

    /// Whether the value is float32 (a float16 or float64 one keeps the
    /// steps that round it as the file says).
    private func isFloat(_ value: Int) -> Bool { graph.values[value].elementType == .float32 && !graph.values[value].isTyped }

    private func maker(of value: Int) -> Int? { makers[value] }

    /// The one step reading `value`, when it has one reader and is not a
    /// graph output.
    private func onlyReader(of value: Int) -> Int? {
        readers[value].count == 1 && !isOutput[value] ? readers[value][0] : nil
    }
}
