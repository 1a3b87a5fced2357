import Foundation

/// ai.onnx.ml `LinearClassifier` on a `[N, C]` input (or `[C]`): scores
/// `S = X · Wᵀ + b` for E classes, then two outputs, as onnxruntime makes
/// them: the label `[N]` (the class int of the largest raw score, as a
/// Float) and the scores `[N, E]` after `post_transform`.
///
/// One coefficient row with two class labels (a binary model written with
/// one score) gives the label `labels[1]` where the raw score is positive,
/// else `labels[0]`, and scores `[1 - s, s]` (onnxruntime's form, whatever
/// the transform; PROBIT is refused there, where onnxruntime leaves half
/// the output unwritten). String labels (`classlabels_strings`) come as
/// their indices, which the op's typed kernel names.
/// `multi_class` does not change the result (onnxruntime ignores it too).
public final class LinearClassifier: Layer {
    /// How scores are transformed, per the ai.onnx.ml spec.
    public enum PostTransform: String, Sendable {
        case none = "NONE", logistic = "LOGISTIC", softmax = "SOFTMAX", softmaxZero = "SOFTMAX_ZERO", probit = "PROBIT"
    }

    public let layerName = "LinearClassifier"
    public let features: Int
    /// E: one score per coefficient row.
    public let classes: Int
    public let labels: [Int]
    public let postTransform: PostTransform
    let coefficients: [Float]
    let intercepts: [Float]

    /// Throws `invalidParameter` for coefficients that are not E rows of
    /// `features`, intercepts that are neither none nor E, or labels that
    /// do not name every class (E, or 2 for one score row).
    public init(coefficients: [Float], intercepts: [Float], labels: [Int], postTransform: PostTransform,
                features: Int) throws {
        guard features >= 1, !coefficients.isEmpty, coefficients.count % features == 0 else {
            throw LayerKitError.invalidParameter(
                "LinearClassifier: \(coefficients.count) coefficients is not a whole number of rows of \(features) feature(s)")
        }
        let classes = coefficients.count / features
        guard intercepts.isEmpty || intercepts.count == classes else {
            throw LayerKitError.invalidParameter("LinearClassifier: \(intercepts.count) intercepts for \(classes) class score(s)")
        }
        let expected = classes == 1 ? 2 : classes
        guard labels.count == expected else {
            throw LayerKitError.invalidParameter(
                "LinearClassifier: \(labels.count) class labels (classlabels_ints or classlabels_strings) for \(classes) "
                + "score row(s); expected \(expected)")
        }
        if classes == 1, postTransform == .probit {
            throw LayerKitError.invalidParameter("LinearClassifier: PROBIT with one score row is not supported")
        }
        (self.coefficients, self.features, self.classes, self.labels, self.postTransform) =
            (coefficients, features, classes, labels, postTransform)
        self.intercepts = intercepts.isEmpty ? [Float](repeating: 0, count: classes) : intercepts
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        let rows = try LinearModelRows.rows(inputShapes, features: features, layer: layerName)
        return [[rows], [rows, classes == 1 ? 2 : classes]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let rows = try LinearModelRows.rows([inputs[0].shape], features: features, layer: layerName)
        var raw = [Float](repeating: 0, count: rows * classes)
        raw.withUnsafeMutableBufferPointer {
            LinearModelRows.scores(inputs[0].dataPointer, rows: rows, features: features, coefficients: coefficients,
                                   intercepts: intercepts, into: $0.baseAddress!)
        }
        let label = outputs[0].dataPointer, scores = outputs[1].dataPointer
        for row in 0..<rows {
            let s = Array(raw[row * classes..<(row + 1) * classes])
            if classes == 1 {
                label[row] = Float(labels[s[0] > 0 ? 1 : 0])
                scores[row * 2] = 1 - s[0]
                scores[row * 2 + 1] = s[0]
                continue
            }
            // The first largest raw score wins, before any transform.
            var best = 0
            for j in 1..<classes where s[j] > s[best] { best = j }
            label[row] = Float(labels[best])
            let transformed = Self.transform(s, postTransform)
            for j in 0..<classes { scores[row * classes + j] = transformed[j] }
        }
    }

    /// One row's scores after `transform`, in onnxruntime's float arithmetic.
    static func transform(_ s: [Float], _ transform: PostTransform) -> [Float] {
        switch transform {
        case .none: return s
        case .logistic: return s.map(logistic)
        case .probit: return s.map { 1.41421356 * inverseErf(2 * $0 - 1) }
        case .softmax:
            let top = s.max() ?? 0
            let e = s.map { exp($0 - top) }
            let sum = e.reduce(0, +)
            return e.map { $0 / sum }
        case .softmaxZero:
            // Scores of (almost) zero stay (almost) zero instead of counting as exp(0).
            let top = s.max() ?? 0
            let scale = exp(-top)
            var sum: Float = 0
            let e = s.map { v -> Float in
                guard v > 1e-7 || v < -1e-7 else { return v * scale }
                let x = exp(v - top)
                sum += x
                return x
            }
            return e.map { $0 / sum }
        }
    }

    static func logistic(_ v: Float) -> Float {
        let p = 1 / (1 + exp(-abs(v)))
        return v < 0 ? 1 - p : p
    }

    /// The approximation of erf⁻¹ the ai.onnx.ml reference and onnxruntime
    /// use (Winitzki's, a = 0.147), so PROBIT scores match theirs.
    static func inverseErf(_ value: Float) -> Float {
        let sign: Float = value < 0 ? -1 : 1
        let x = (1 - value) * (1 + value)
        let l = log(x)
        let v = 2 / (3.14159 * 0.147) + 0.5 * l
        let v2 = 1 / 0.147 * l
        return sign * (-v + (v * v - v2).squareRoot()).squareRoot()
    }
}
