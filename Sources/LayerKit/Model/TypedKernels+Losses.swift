import Foundation
import LayerKitONNX

/// The classification losses: NegativeLogLikelihoodLoss and
/// SoftmaxCrossEntropyLoss (its log-softmax, then the same loss), on
/// scores [N, C] or [N, C, d1, ...] with int32 or int64 class indices
/// [N] or [N, d1, ...]. Every float type computes in Double and rounds to
/// the scores' type once at the end: a mean over many positions adds up
/// in Double (float64 exactly as numpy's reference).
///
/// The training losses (`Loss.crossEntropy`) are float32 [N, K] losses
/// with gradients and no weights or ignored class; these follow the ONNX
/// spec: per-class weights, `ignore_index`, and reduction none, sum or
/// mean, where the mean divides by the summed weights of the positions not
/// ignored (their count without weights).
extension TypedKernels {
    /// NegativeLogLikelihoodLoss-12 to 22: input (log-probabilities),
    /// target, optional weight; loss = -input[n, target, d...] * weight[target].
    static func negativeLogLikelihoodLoss(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let scores = try ClassScores(input(0, inputs, node), "input", node)
        return [try scores.loss(logProbabilities: scores.values, target: input(1, inputs, node), weight: optional(2, inputs), node)]
    }

    /// SoftmaxCrossEntropyLoss-12 and 13: the loss of the log-softmax of the
    /// scores along axis 1, and that log-softmax (the optional log_prob
    /// output, of the scores' shape).
    static func softmaxCrossEntropyLoss(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let scores = try ClassScores(input(0, inputs, node), "scores", node)
        let logProbabilities = scores.logSoftmax()
        let loss = try scores.loss(logProbabilities: logProbabilities, target: input(1, inputs, node),
                                   weight: optional(2, inputs), node)
        return [loss, try TypedTensor(scores.type, shape: scores.shape, doubles: logProbabilities)]
    }
}

/// Class scores [N, C, d1, ...] in Double, with their extents: N batch
/// items, C classes, D positions per item (the product of d1, ...; 1 for [N, C]).
private struct ClassScores {
    let type: ElementType
    let shape: [Int]
    let values: [Double]
    let n: Int, classes: Int, positions: Int

    init(_ tensor: TypedTensor, _ what: String, _ node: ONNXNodeContext) throws {
        guard tensor.elementType.isFloatingPoint else {
            throw node.error("\(what) is \(tensor.elementType); the op takes float scores")
        }
        guard tensor.shape.count >= 2 else {
            throw node.error("\(what) must be [N, C] or [N, C, d1, ...], got \(Tensor.describe(tensor.shape))")
        }
        (type, shape, values) = (tensor.elementType, tensor.shape, tensor.doubles())
        (n, classes, positions) = (shape[0], shape[1], shape[2...].reduce(1, *))
    }

    /// The log-softmax along the class axis, each position's maximum taken
    /// out first so large scores cannot overflow.
    func logSoftmax() -> [Double] {
        var out = values
        for item in 0..<n {
            for position in 0..<positions {
                let at = { (c: Int) in (item * classes + c) * positions + position }
                let largest = (0..<classes).map { values[at($0)] }.max() ?? 0
                let logSum = largest + log((0..<classes).reduce(0) { $0 + exp(values[at($1)] - largest) })
                for c in 0..<classes { out[at(c)] = values[at(c)] - logSum }
            }
        }
        return out
    }

    /// The loss of `logProbabilities` (of these scores' shape) against the
    /// class indices `target` [N, d1, ...], weighted by `weight` [C] when
    /// given, reduced as the node's `reduction` says. A target equal to
    /// `ignore_index` adds nothing, to the loss or to the mean's
    /// denominator; any other target outside 0..<C is an error.
    func loss(logProbabilities: [Double], target: TypedTensor, weight: TypedTensor?, _ node: ONNXNodeContext) throws
        -> TypedTensor {
        try node.requireAttributes(["ignore_index", "reduction"])
        let reduction = try node.string("reduction", default: "mean")
        guard ["none", "sum", "mean"].contains(reduction) else {
            throw node.error("reduction '\(reduction)' is not none, sum or mean")
        }
        let ignored = try node.node.int("ignore_index").map(Int64.init)
        let targetShape = [n] + shape[2...]
        guard target.elementType.isInteger else {
            throw node.error("target is \(target.elementType); the op takes int32 or int64 class indices")
        }
        guard target.shape == targetShape else {
            throw node.error("target \(Tensor.describe(target.shape)) must be \(Tensor.describe(targetShape)) for scores "
                             + "\(Tensor.describe(shape))")
        }
        var weights: [Double]?
        if let weight {
            guard weight.shape == [classes], weight.elementType.isFloatingPoint else {
                throw node.error("weight must be \(classes) floats, one per class; got \(weight)")
            }
            weights = weight.doubles()
        }
        let indices = target.integers()
        var losses = [Double](repeating: 0, count: indices.count)
        var (total, weightTotal) = (0.0, 0.0)
        for (k, index) in indices.enumerated() where index != ignored {
            guard index >= 0, index < Int64(classes) else {
                throw node.error("target \(index) at position \(k) is not a class index in 0..<\(classes)"
                                 + (ignored.map { " nor ignore_index \($0)" } ?? ""))
            }
            let (item, position) = k.quotientAndRemainder(dividingBy: positions)
            let w = weights?[Int(index)] ?? 1
            losses[k] = -logProbabilities[(item * classes + Int(index)) * positions + position] * w
            total += losses[k]
            weightTotal += w
        }
        switch reduction {
        case "none": return try TypedTensor(type, shape: targetShape, doubles: losses)
        case "sum": return try TypedTensor(type, shape: [], doubles: [total])
        // Every position ignored: 0 / 0, NaN, as onnxruntime and ONNX's reference give.
        default: return try TypedTensor(type, shape: [], doubles: [total / weightTotal])
        }
    }
}
