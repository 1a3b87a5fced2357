import Foundation

/// ai.onnx.ml `SVMClassifier` on a `[N, C]` input (or `[C]`), as
/// onnxruntime computes it, with two outputs: the label `[N]` (a class
/// int, as a Float) and scores.
///
/// With support vectors (scikit-learn's SVC, libsvm's one-vs-one form):
/// each pair of classes i < j has the decision value `Σ coef · K(x, sv) +
/// rho` over both classes' vectors (positive votes for i), and the label is
/// the class with most votes (the first on a tie). The scores are
/// - with `prob_a`/`prob_b` (SVC(probability=True)): the class
///   probabilities, from Platt's sigmoid of each pair's value coupled by
///   libsvm's pairwise method (Wu, Lin and Weng 2004), `[N, E]`;
/// - else, more than two classes: the pair values `[N, E(E-1)/2]`;
///   two classes: `[-s, s]` for the one value `s`.
///
/// Without support vectors (the linear form): one score per class
/// `x · coefficients[j] + rho[0]`, the label the largest (for two classes,
/// the second when its score passes 0.5 with non-negative coefficients, or
/// 0 with mixed ones), scores `[N, E]`.
///
/// Sums in Double, as libsvm's (see `SVMKernel`). CPU only, as
/// `SVMRegressor` (why there).
public final class SVMClassifier: Layer {
    public let layerName = "SVMClassifier"
    public let features: Int
    public let labels: [Int]
    public let postTransform: LinearClassifier.PostTransform
    let kernel: SVMKernel
    /// Support vectors per class; empty for the linear form.
    let vectorsPerClass: [Int]
    /// Where each class's vectors start.
    let starts: [Int]
    let supportVectors: [Float]
    /// `[E - 1, vectors]` (one-vs-one) or `[E, features]` (linear).
    let coefficients: [Float]
    let rho: [Float]
    let probabilityA: [Float]
    let probabilityB: [Float]
    let coefficientsAreNonNegative: Bool

    /// Throws `invalidParameter` for fewer than 2 or more than 65535
    /// classes, or arrays whose lengths do not fit the classes, vectors and
    /// features (each named).
    init(kernel: SVMKernel, labels: [Int], vectorsPerClass: [Int], supportVectors: [Float], coefficients: [Float],
         rho: [Float], probabilityA: [Float], probabilityB: [Float], postTransform: LinearClassifier.PostTransform,
         features: Int) throws {
        let classes = labels.count
        guard (2...DecisionForest.maxTargets).contains(classes) else {
            throw LayerKitError.invalidParameter("SVMClassifier: \(classes) class label(s) (classlabels_ints or "
                                                 + "classlabels_strings); expected 2 to \(DecisionForest.maxTargets)")
        }
        let pairs = classes * (classes - 1) / 2
        guard probabilityA.count == probabilityB.count, probabilityA.isEmpty || probabilityA.count == pairs else {
            throw LayerKitError.invalidParameter("SVMClassifier: prob_a has \(probabilityA.count) values and prob_b "
                                                 + "\(probabilityB.count); expected none or \(pairs) each (one per pair of classes)")
        }
        if vectorsPerClass.isEmpty {
            guard supportVectors.isEmpty, coefficients.count == classes * features, !rho.isEmpty, probabilityA.isEmpty else {
                throw LayerKitError.invalidParameter(
                    "SVMClassifier: the linear form (no vectors_per_class) takes \(classes) × \(features) coefficients and "
                    + "a rho, no support vectors or probabilities; got \(coefficients.count) coefficients, \(rho.count) rho, "
                    + "\(supportVectors.count) support vector values")
            }
        } else {
            guard vectorsPerClass.count == classes, vectorsPerClass.allSatisfy({ (0...supportVectors.count).contains($0) }) else {
                throw LayerKitError.invalidParameter("SVMClassifier: vectors_per_class \(vectorsPerClass.prefix(8)) does not "
                                                     + "give a count of support vectors to each of \(classes) classes")
            }
            let vectors = vectorsPerClass.reduce(0, +)
            guard vectors >= 1, supportVectors.count == vectors * features, coefficients.count == (classes - 1) * vectors,
                  rho.count == pairs else {
                throw LayerKitError.invalidParameter(
                    "SVMClassifier: \(vectors) support vectors of \(features) feature(s) for \(classes) classes take "
                    + "\(vectors * features) support vector values, \((classes - 1) * vectors) coefficients and \(pairs) rho; "
                    + "got \(supportVectors.count), \(coefficients.count) and \(rho.count)")
            }
            if classes == 2, probabilityA.isEmpty, postTransform != .none {
                throw LayerKitError.invalidParameter("SVMClassifier: post_transform \(postTransform.rawValue) on a binary "
                                                     + "model's one decision value is not supported")
            }
        }
        var starts: [Int] = [], start = 0
        for count in vectorsPerClass {
            starts.append(start)
            start += count
        }
        (self.kernel, self.labels, self.vectorsPerClass, self.starts, self.supportVectors, self.coefficients, self.rho,
         self.probabilityA, self.probabilityB, self.postTransform, self.features) =
            (kernel, labels, vectorsPerClass, starts, supportVectors, coefficients, rho, probabilityA, probabilityB,
             postTransform, features)
        coefficientsAreNonNegative = coefficients.allSatisfy { $0 >= 0 }
    }

    /// Scores per row: classes, or the pair values without probabilities
    /// (two for a binary model).
    var scoreCount: Int {
        let classes = labels.count
        guard !vectorsPerClass.isEmpty, probabilityA.isEmpty else { return classes }
        return classes == 2 ? 2 : classes * (classes - 1) / 2
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        let rows = try LinearModelRows.rows(inputShapes, features: features, layer: layerName)
        return [[rows], [rows, scoreCount]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let rows = try LinearModelRows.rows([inputs[0].shape], features: features, layer: layerName)
        let label = outputs[0].dataPointer, output = outputs[1].dataPointer
        let width = scoreCount
        supportVectors.withUnsafeBufferPointer { vectors in
            for row in 0..<rows {
                let x = UnsafePointer(inputs[0].dataPointer + row * features)
                // Only the linear form has no support vectors.
                let (winner, scores) = vectors.baseAddress.map { oneVersusOne(x, $0) } ?? linear(x)
                label[row] = Float(labels[winner])
                for j in 0..<width { output[row * width + j] = scores[j] }
            }
        }
    }

    /// The linear form's winner and transformed class scores.
    private func linear(_ x: UnsafePointer<Float>) -> (Int, [Float]) {
        let classes = labels.count
        var scores = [Float](repeating: 0, count: classes)
        for j in 0..<classes {
            var sum = 0.0
            for k in 0..<features { sum += Double(x[k]) * Double(coefficients[j * features + k]) }
            scores[j] = Float(sum + Double(rho[0]))
        }
        var best = 0
        for j in 1..<classes where scores[j] > scores[best] { best = j }
        if classes == 2 {
            let top = scores[best]
            if (coefficientsAreNonNegative && top >= 0.5) || (!coefficientsAreNonNegative && top > 0) { best = 1 }
        }
        return (best, LinearClassifier.transform(scores, postTransform))
    }

    /// The one-vs-one form's winner (by votes) and scores.
    private func oneVersusOne(_ x: UnsafePointer<Float>, _ vectors: UnsafePointer<Float>) -> (Int, [Float]) {
        let classes = labels.count
        let count = supportVectors.count / features
        let kernels = (0..<count).map { kernel(x, vectors + $0 * features, count: features) }
        var votes = [Int](repeating: 0, count: classes)
        var values: [Double] = []
        values.reserveCapacity(classes * (classes - 1) / 2)
        for i in 0..<classes {
            for j in (i + 1)..<max(classes, i + 1) {
                // Class i's vectors weigh in by coefficient row j - 1, class j's by row i.
                var sum = 0.0
                for v in starts[i]..<(starts[i] + vectorsPerClass[i]) {
                    sum += Double(coefficients[(j - 1) * count + v]) * kernels[v]
                }
                for v in starts[j]..<(starts[j] + vectorsPerClass[j]) {
                    sum += Double(coefficients[i * count + v]) * kernels[v]
                }
                sum += Double(rho[values.count])
                values.append(sum)
                votes[sum > 0 ? i : j] += 1
            }
        }
        var winner = 0
        for j in 1..<classes where votes[j] > votes[winner] { winner = j }
        if !probabilityA.isEmpty {
            return (winner, LinearClassifier.transform(probabilities(values).map(Float.init), postTransform))
        }
        if classes == 2 { return (winner, [Float(-values[0]), Float(values[0])]) }
        return (winner, LinearClassifier.transform(values.map(Float.init), postTransform))
    }

    /// Class probabilities from the pair values: Platt's sigmoid per pair,
    /// clipped to [1e-7, 1 - 1e-7] as libsvm does, then coupled by
    /// minimizing Σ_i Σ_{j≠i} (r_ji p_i - r_ij p_j)² over the simplex, by
    /// libsvm's fixed-point iteration (at most max(100, E) sweeps, to a
    /// residual of 0.005 / E).
    private func probabilities(_ values: [Double]) -> [Double] {
        let k = labels.count
        // r[i][j]: the probability of i against j.
        var r = [[Double]](repeating: [Double](repeating: 0, count: k), count: k)
        var pair = 0
        for i in 0..<k {
            for j in (i + 1)..<max(k, i + 1) {
                let f = values[pair] * Double(probabilityA[pair]) + Double(probabilityB[pair])
                let p = min(max(1 / (1 + exp(f)), 1e-7), 1 - 1e-7)
                (r[i][j], r[j][i]) = (p, 1 - p)
                pair += 1
            }
        }
        var q = [[Double]](repeating: [Double](repeating: 0, count: k), count: k)
        for t in 0..<k {
            for j in 0..<k where j != t {
                q[t][t] += r[j][t] * r[j][t]
                q[t][j] = -r[j][t] * r[t][j]
            }
        }
        var p = [Double](repeating: 1 / Double(k), count: k)
        var qp = [Double](repeating: 0, count: k)
        let tolerance = 0.005 / Double(k)
        for _ in 0..<max(100, k) {
            var pqp = 0.0
            for t in 0..<k {
                qp[t] = (0..<k).reduce(0) { $0 + q[t][$1] * p[$1] }
                pqp += p[t] * qp[t]
            }
            if qp.allSatisfy({ abs($0 - pqp) < tolerance }) { break }
            for t in 0..<k {
                // Move p[t] to zero its gradient's difference, then renormalize.
                let step = (pqp - qp[t]) / q[t][t]
                p[t] += step
                let scale = 1 + step
                pqp = (pqp + step * (step * q[t][t] + 2 * qp[t])) / (scale * scale)
                for j in 0..<k {
                    qp[j] = (qp[j] + step * q[t][j]) / scale
                    p[j] /= scale
                }
            }
        }
        return p
    }
}
