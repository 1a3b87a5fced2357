import Foundation

/// ai.onnx.ml `TreeEnsembleClassifier` on a `[N, C]` input (or `[C]`):
/// each row walks every tree, the leaves' class weights are summed per
/// class, and two outputs come out, as onnxruntime makes them: the label
/// `[N]` (a class int, as a Float) and the scores `[N, E]` for the E class
/// labels after `post_transform`.
///
/// - More than two classes: the base values are added, the label is the
///   first class of the largest score among those some leaf scored (the
///   first label when none was), and every score is transformed.
/// - Two classes whose weights are all for one class (scikit-learn's
///   binary trees, forests and boosting): that class's sum `s` plus the one
///   base value decides: the second label when `s > 0.5` (weights all
///   non-negative: a probability) or `s > 0` (mixed signs: a margin), and
///   the scores are `[1 - s, s]` or, for a margin, `[-s, s]` (LOGISTIC:
///   `[σ(-s), σ(s)]`); where the second class is the one scored and a
///   leaf scored it, both sums are transformed as they are.
/// - Two classes both scored: both sums are transformed as they are, and
///   the second label wins when its sum is positive (onnxruntime's rule;
///   where it gives the ints 1 and 0 here, LayerKit gives the labels, which
///   agree for scikit-learn's 0/1 labels).
///
/// Refused where onnxruntime's result depends on which leaf a row reached
/// in ways the spec does not define: two base values for two classes, and
/// PROBIT on a binary model's one score. The sums are Float, in
/// onnxruntime's order. CPU only, as `TreeEnsembleRegressor` (why there).
public final class TreeEnsembleClassifier: Layer {
    public let layerName = "TreeEnsembleClassifier"
    public let features: Int
    public let labels: [Int]
    public let postTransform: LinearClassifier.PostTransform
    let forest: DecisionForest
    let baseValues: [Float]
    /// Two labels, the weights all for one class.
    let isBinary: Bool
    let weightsAreNonNegative: Bool

    /// Throws `invalidParameter` for fewer than 2 or more than 65535
    /// labels, base values that do not fit the classes, or the refused
    /// combinations above.
    init(forest: DecisionForest, labels: [Int], baseValues: [Float], postTransform: LinearClassifier.PostTransform,
         features: Int) throws {
        guard (2...DecisionForest.maxTargets).contains(labels.count) else {
            throw LayerKitError.invalidParameter("TreeEnsembleClassifier: \(labels.count) class label(s) "
                                                 + "(classlabels_int64s or classlabels_strings); expected 2 to \(DecisionForest.maxTargets)")
        }
        let classes = labels.count
        isBinary = classes == 2 && Set(forest.targets).count == 1
        if classes == 2 {
            guard baseValues.count <= 1 else {
                throw LayerKitError.invalidParameter("TreeEnsembleClassifier: 2 base_values for 2 classes are not supported "
                                                     + "(onnxruntime adds them only to some rows); export one base value")
            }
            if isBinary, postTransform == .probit {
                throw LayerKitError.invalidParameter("TreeEnsembleClassifier: PROBIT on a binary model's one score is not supported")
            }
        } else if !baseValues.isEmpty, baseValues.count != classes {
            throw LayerKitError.invalidParameter("TreeEnsembleClassifier: \(baseValues.count) base_values for \(classes) classes")
        }
        weightsAreNonNegative = forest.weights.allSatisfy { $0 >= 0 }
        (self.forest, self.labels, self.baseValues, self.postTransform, self.features) =
            (forest, labels, baseValues, postTransform, features)
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        let rows = try LinearModelRows.rows(inputShapes, features: features, layer: layerName)
        return [[rows], [rows, labels.count]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let rows = try LinearModelRows.rows([inputs[0].shape], features: features, layer: layerName)
        let classes = labels.count
        let label = outputs[0].dataPointer, output = outputs[1].dataPointer
        var scores = [Float](repeating: 0, count: classes)
        var scored = [Bool](repeating: false, count: classes)
        for row in 0..<rows {
            for j in 0..<classes { (scores[j], scored[j]) = (0, false) }
            let x = UnsafePointer(inputs[0].dataPointer + row * features)
            for root in forest.roots {
                for k in forest.leaf(from: root, x).weights {
                    scores[forest.targets[k]] += Float(forest.weights[k])
                    scored[forest.targets[k]] = true
                }
            }
            let (winner, finished) = classes > 2 ? multiclass(&scores, scored) : twoClasses(&scores, scored)
            label[row] = Float(labels[winner])
            for j in 0..<classes { output[row * classes + j] = finished[j] }
        }
    }

    /// The winning class and the transformed scores, more than two classes.
    private func multiclass(_ scores: inout [Float], _ scored: [Bool]) -> (Int, [Float]) {
        var best = -1
        for j in scores.indices {
            if !baseValues.isEmpty { scores[j] += baseValues[j] }
            let counts = scored[j] || !baseValues.isEmpty
            if counts, best == -1 || scores[j] > scores[best] { best = j }
        }
        return (max(best, 0), LinearClassifier.transform(scores, postTransform))
    }

    /// The winning class and the two scores, two classes.
    private func twoClasses(_ scores: inout [Float], _ scored: [Bool]) -> (Int, [Float]) {
        if let base = baseValues.first { scores[0] += base }
        // Class 1 unscored leaves one score, class 0's sum (onnxruntime drops the other).
        let one = !scored[1]
        let positive = scored[1] ? scores[1] : (scored[0] ? scores[0] : 0)
        let winner: Int
        let isMargin: Bool
        if isBinary && weightsAreNonNegative {
            (winner, isMargin) = (positive > 0.5 ? 1 : 0, false)
        } else {
            (winner, isMargin) = (positive > 0 ? 1 : 0, true)
        }
        guard one else { return (winner, LinearClassifier.transform(scores, postTransform)) }
        let s = scores[0]
        if !isMargin { return (winner, [1 - s, s]) }
        if postTransform == .logistic { return (winner, [LinearClassifier.logistic(-s), LinearClassifier.logistic(s)]) }
        return (winner, [-s, s])
    }
}
