import Foundation

/// ai.onnx.ml `TreeEnsembleRegressor` (and opset 5's `TreeEnsemble`) on a
/// `[N, C]` input (or `[C]`): each row walks every tree of the forest to a
/// leaf, and the leaves' weights are aggregated per target into `[N,
/// targets]`. scikit-learn's decision trees, random forests and gradient
/// boosting export as one.
///
/// The arithmetic is onnxruntime's, in Float and in its order, so results
/// match it bit for bit (a float64 input computes in Double, `predict(float64:rows:)`): SUM adds the weights tree by tree then the base
/// value; AVERAGE divides that sum by the tree count before adding the
/// base; MIN and MAX keep the extreme weight a row reached (none: 0) and
/// add the base. `post_transform` applies to two targets or more; with one
/// target only PROBIT is taken (onnxruntime ignores the others there, the
/// ONNX reference applies them, so they are refused).
///
/// CPU only: a walk is a chain of data-dependent branches per row, which a
/// slice-image shader would run no faster than the CPU, for outputs a few
/// numbers wide.
public final class TreeEnsembleRegressor: Layer, Float64Regressor {
    /// How the trees' weights for one target are combined.
    public enum Aggregate: String, Sendable {
        case sum = "SUM", average = "AVERAGE", min = "MIN", max = "MAX"
    }

    public let layerName: String
    public let features: Int
    public let targetCount: Int
    public let aggregate: Aggregate
    public let postTransform: LinearClassifier.PostTransform
    let forest: DecisionForest
    /// One per target, or empty (zeros); as the file gives them (see `DecisionForest.Node.threshold`).
    let baseValues: [Double]

    /// Throws `invalidParameter` for a target count out of 1...65535, base
    /// values neither none nor one per target, or a transform refused for
    /// one target.
    init(name: String, forest: DecisionForest, targets: Int, aggregate: Aggregate, baseValues: [Double],
         postTransform: LinearClassifier.PostTransform, features: Int) throws {
        guard (1...DecisionForest.maxTargets).contains(targets) else {
            throw LayerKitError.invalidParameter("\(name): n_targets \(targets) is not in 1...\(DecisionForest.maxTargets)")
        }
        guard baseValues.isEmpty || baseValues.count == targets else {
            throw LayerKitError.invalidParameter("\(name): \(baseValues.count) base_values for \(targets) target(s)")
        }
        if targets == 1, postTransform != .none, postTransform != .probit {
            throw LayerKitError.invalidParameter("\(name): post_transform \(postTransform.rawValue) on one target is not "
                                                 + "supported (onnxruntime ignores it, the ONNX reference applies it)")
        }
        (layerName, self.forest, targetCount, self.aggregate, self.baseValues, self.postTransform, self.features) =
            (name, forest, targets, aggregate, baseValues, postTransform, features)
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        let rows = try LinearModelRows.rows(inputShapes, features: features, layer: layerName)
        return [[rows, targetCount]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let rows = try LinearModelRows.rows([inputs[0].shape], features: features, layer: layerName)
        let output = outputs[0].dataPointer
        for row in 0..<rows {
            let scores = aggregated(UnsafePointer(inputs[0].dataPointer + row * features))
            let finished = targetCount == 1
                ? (postTransform == .probit ? [1.41421356 * LinearClassifier.inverseErf(2 * scores[0] - 1)] : scores)
                : LinearClassifier.transform(scores, postTransform)
            for j in 0..<targetCount { output[row * targetCount + j] = finished[j] }
        }
    }

    /// A float64 input's `[N, targets]` outputs, computed in Double; nil
    /// under a `post_transform`, which is computed in float32 only.
    func predict(float64 x: [Double], rows: Int) -> [Double]? {
        guard postTransform == .none else { return nil }
        return x.withUnsafeBufferPointer { x -> [Double] in
            guard let base = x.baseAddress else { return [] }
            return (0..<rows).flatMap { row in aggregated(base + row * features) }
        }
    }

    /// One row's aggregated weights per target, before any transform, in
    /// the row's type: Float in onnxruntime's arithmetic and order, Double
    /// for a float64 row (the parameters as the file gives them).
    private func aggregated<T: BinaryFloatingPoint>(_ x: UnsafePointer<T>) -> [T] {
        var scores = [T](repeating: 0, count: targetCount)
        var scored = [Bool](repeating: false, count: targetCount)
        for root in forest.roots {
            for k in forest.leaf(from: root, x).weights {
                let (j, w) = (forest.targets[k], T(forest.weights[k]))
                switch aggregate {
                case .sum, .average: scores[j] += w
                case .min: scores[j] = !scored[j] || w < scores[j] ? w : scores[j]
                case .max: scores[j] = !scored[j] || w > scores[j] ? w : scores[j]
                }
                scored[j] = true
            }
        }
        let trees = T(forest.roots.count)
        for j in 0..<targetCount {
            let base = baseValues.isEmpty ? 0 : T(baseValues[j])
            switch aggregate {
            case .sum: scores[j] += base
            case .average: scores[j] = scores[j] / trees + base
            case .min, .max: scores[j] = base + (scored[j] ? scores[j] : 0)
            }
        }
        return scores
    }
}
