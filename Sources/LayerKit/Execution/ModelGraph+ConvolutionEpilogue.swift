/// Fused epilogues: a Conv, Gemm or flattened Gemm step takes in the
/// steps after it that only finish its output, so the output is written
/// once, finished, instead of once per op (a pass over memory on the CPU, a
/// dispatch and an image round trip on the GPU each).
///
/// What fuses, in order after the product, while each value in between has
/// exactly one reader and is not a graph output (standard ONNX nodes only;
/// a custom domain's node keeps its step):
/// - an inference BatchNormalization right after it, folded into the
///   weights and bias at load (`folding(_:)`);
/// - single-input per-element steps whose work is a `FormulaChain` (the
///   catalog's ops as the importer makes them: Relu, Clip with constant
///   bounds, LeakyRelu, HardSwish, PRelu with a per-channel slope, ...;
///   formula layers; fused chains; a BatchNormalization that is not first;
///   SiLU, which `fuseSilus()` made one Swish step before);
/// - one Add of a tensor of the same shape made elsewhere (ResNet's skip),
///   before or after stages: Conv -> BN -> Add -> Relu is one step.
extension ModelGraph {
    /// The most per-element stages one epilogue takes (a longer chain keeps
    /// the rest as steps), as `FormulaChain.maxStagesPerKernel` bounds a
    /// kernel's stages for the driver's compile time.
    static let maxEpilogueStages = FormulaChain.maxStagesPerKernel

    /// Replaces each product and the steps that finish its output by one
    /// `EpilogueLayer` step, at the last fused step's place (where every
    /// value it reads is made), named after the product's node, its op type
    /// the fused nodes' joined by `+` (`Conv+BatchNormalization+Add+Relu`).
    mutating func fuseConvolutionEpilogues() {
        let (readers, isOutput) = self.readers()
        var removed = Set<Int>()
        for first in steps.indices where !removed.contains(first) {
            guard var producer = Self.producer(steps[first]) else { continue }
            var before: [FormulaChain.Stage] = [], after: [FormulaChain.Stage] = []
            var residual: Int?
            var group = [first]
            var opTypes = [steps[first].opType]
            var current = steps[first].outputs[0]
            walk: while !isOutput[current], before.count + after.count < Self.maxEpilogueStages {
                let next = readers[current]
                if next.contains(where: { removed.contains($0) || !Self.isStandard(steps[$0]) }) { break }
                if next.count == 1, steps[next[0]].outputs.count == 1 {
                    let step = steps[next[0]]
                    if step.inputs == [current], let bn = step.layer as? BatchNormalization, before.isEmpty,
                       residual == nil, let folded = producer.folding(bn) {
                        producer = folded
                    } else if step.inputs == [current], let chain = Self.formulaChain(of: step.layer),
                              before.count + after.count + chain.stages.count <= Self.maxEpilogueStages {
                        if residual == nil { before += chain.stages } else { after += chain.stages }
                    } else if residual == nil, let add = step.layer as? BinaryLayer, add.operation == .add,
                              add.inputCount == 2, !add.average, step.inputs.count == 2,
                              let other = step.inputs.first(where: { $0 != current }), step.inputs.contains(current),
                              values[other].shape == values[current].shape, values[other].constant == nil {
                        residual = other
                    } else {
                        break walk
                    }
                    group.append(next[0])
                    opTypes.append(step.opType)
                    current = step.outputs[0]
                } else {
                    break
                }
            }
            guard group.count > 1 else { continue }
            let last = group.max() ?? first
            let shape = values[current].shape
            guard let epilogue = try? Epilogue(before: FormulaChain(stages: before), residual: residual != nil,
                                               after: FormulaChain(stages: after),
                                               channels: CPUEvaluator.channels(of: shape)) else { continue }
            let layer = EpilogueLayer(producer: producer, epilogue: epilogue, name: opTypes.joined(separator: "+"))
            let inputs = [steps[first].inputs[0]] + (residual.map { [$0] } ?? [])
            guard (try? layer.outputShapes(forInputShapes: inputs.map { values[$0].shape })) == [shape] else { continue }
            steps[last] = Step(name: steps[first].name, opType: layer.layerName, domain: steps[first].domain,
                               layer: layer, inputs: inputs, outputs: steps[last].outputs)
            removed.formUnion(group.filter { $0 != last })
        }
        removeSteps(at: removed)
    }

    /// Whether the step is a standard ONNX node: a custom domain's node
    /// (a registered layer, e.g. the Core ML article's `layerkit.Swish`)
    /// keeps its own step, as its author named it.
    static func isStandard(_ step: Step) -> Bool { step.domain.isEmpty || step.domain == "ai.onnx" }

    /// The product a step is, when an epilogue can be fused into it.
    private static func producer(_ step: Step) -> EpilogueLayer.Producer? {
        guard step.inputs.count == 1, step.outputs.count == 1, isStandard(step) else { return nil }
        switch step.layer {
        case let c as Convolution: return .convolution(c)
        case let g as Gemm: return .gemm(g)
        case let f as FlattenedGemm: return .flattenedGemm(f)
        default: return nil
        }
    }

    /// The formula chain a per-element layer runs, when that is all it does:
    /// the catalog's layers (not a subclass, which may override their work),
    /// formula layers, fused chains, BatchNormalization's per-channel Linear.
    static func formulaChain(of layer: Layer?) -> FormulaChain? {
        switch layer {
        case let e as ElementwiseLayer
            where type(of: e) == ElementwiseLayer.self || type(of: e) == FormulaLayer.self || type(of: e) == Swish.self:
            return e.chain
        case let f as FusedLayer: return f.chain
        case let b as BatchNormalization: return b.linear
        default: return nil
        }
    }
}

extension EpilogueLayer.Producer {
    /// The product with inference BatchNormalization `bn` (y = a x + b per
    /// channel) folded in: weights scaled by a per output channel, bias
    /// a * bias + b (in double, rounded once). Results differ from the
    /// unfused pair by float32 rounding only: each weight is rounded once
    /// more (a * w), and the sum and the affine map are no longer rounded
    /// separately, which bounds the difference by a few units in the last
    /// place of the sum of |a w x| terms (see Docs/ARCHITECTURE.md). Nil
    /// when `bn` does not fit (channels, a per-row or full Gemm C).
    func folding(_ bn: BatchNormalization) -> EpilogueLayer.Producer? {
        let (a, b) = (bn.multipliers, bn.offsets)
        switch self {
        case .convolution(let c):
            guard a.count == c.outputChannels else { return nil }
            let m = c.outputChannels
            let perChannel = c.weights.count / m
            let w = c.weights.elements
            var weights = [Float](repeating: 0, count: w.count)
            for o in 0..<m { for i in 0..<perChannel { weights[o * perChannel + i] = a[o] * w[o * perChannel + i] } }
            let bias = (0..<m).map { o in Float(Double(a[o]) * Double(c.bias?[o] ?? 0) + Double(b[o])) }
            let shape = c.spatialRank == 1 ? Array(c.weights.shape.prefix(3)) : c.weights.shape
            guard let w = try? Tensor(shape: shape, values: weights), let bias = try? Tensor(shape: [m], values: bias),
                  let folded = try? Convolution(weights: w, bias: bias, strides: c.strides, dilations: c.dilations,
                                                padding: c.padding, group: c.group) else { return nil }
            folded.threadCount = c.threadCount
            return .convolution(folded)
        case .gemm(let g):
            return g.folding(a, b).map { .gemm($0) }
        case .flattenedGemm(let f):
            guard let gemm = f.gemm.folding(a, b),
                  let folded = FlattenedGemm(gemm: gemm, channels: f.map.channels, height: f.map.height, width: f.map.width)
            else { return nil }
            return .flattenedGemm(folded)
        }
    }
}

extension Gemm {
    /// This product with `y = a y + b` per output column folded into B' and
    /// a per-column C; nil for a per-row or full C, or `a` of another width.
    func folding(_ a: [Float], _ b: [Float]) -> Gemm? {
        let (k, m) = (inputFeatures, outputFeatures)
        guard a.count == m else { return nil }
        var columns: [Float]? = nil
        switch addend {
        case .columns(let c): columns = Array(c.elements)
        case nil: break
        case .rows, .full: return nil
        }
        let w = weights.elements
        var scaled = [Float](repeating: 0, count: k * m)
        for p in 0..<k { for j in 0..<m { scaled[p * m + j] = w[p * m + j] * a[j] } }
        let c = (0..<m).map { j in Float(Double(a[j]) * Double(columns?[j] ?? 0) + Double(b[j])) }
        guard let bTensor = try? Tensor(shape: [k, m], values: scaled), let cTensor = try? Tensor(shape: [m], values: c),
              let folded = try? Gemm(b: bTensor, c: cTensor, alpha: alpha, beta: 1, transA: transA, name: layerName)
        else { return nil }
        folded.threadCount = threadCount
        return folded
    }
}
