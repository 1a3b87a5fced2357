import Foundation

extension Loss {
    /// Fused softmax + cross-entropy over logits [N, K] with class indices;
    /// see `Loss.crossEntropy`. Each row's log-sum-exp is taken in Double
    /// after subtracting the row's maximum, so large logits cannot overflow.
    static func crossEntropy(logits: Tensor, classes: Tensor) throws -> LossResult {
        let (n, k) = try classShape(logits, classes, .crossEntropy)
        let x = logits.elements
        var gradient = [Double](repeating: 0, count: n * k)
        var total = 0.0
        for i in 0..<n {
            let row = i * k
            let target = try classIndex(classes, i, k, .crossEntropy)
            var largest = -Double.infinity
            for j in 0..<k { largest = max(largest, Double(x[row + j])) }
            var sum = 0.0
            for j in 0..<k { sum += exp(Double(x[row + j]) - largest) }
            let logSumExp = largest + log(sum)
            total += logSumExp - Double(x[row + target])
            for j in 0..<k {
                let softmax = exp(Double(x[row + j]) - logSumExp)
                gradient[row + j] = (softmax - (j == target ? 1 : 0)) / Double(n)
            }
        }
        return LossResult(value: total / Double(n), gradient: try gradientTensor(logits.shape, gradient))
    }

    /// Cross-entropy of probabilities [N, K] (a softmax's output) with class
    /// indices, the target's probability clamped to `probabilityFloor`; see
    /// `Loss.crossEntropyFromProbabilities`.
    static func crossEntropy(probabilities: Tensor, classes: Tensor) throws -> LossResult {
        let (n, k) = try classShape(probabilities, classes, .crossEntropyFromProbabilities)
        let p = probabilities.elements
        // A float32 softmax may land an ulp above 1; anything further is not a probability.
        if let i = p.firstIndex(where: { $0 < 0 || $0 > 1 + 1e-5 }) {
            throw LayerKitError.invalidParameter(
                "ce-probabilities loss: prediction element \(i) is \(p[i]), not a probability in [0, 1] "
                + "(use --loss ce for logits)")
        }
        var gradient = [Double](repeating: 0, count: n * k)
        var total = 0.0
        for i in 0..<n {
            let target = try classIndex(classes, i, k, .crossEntropyFromProbabilities)
            let clamped = max(Double(p[i * k + target]), probabilityFloor)
            total -= log(clamped)
            gradient[i * k + target] = -1 / (Double(n) * clamped)
        }
        return LossResult(value: total / Double(n), gradient: try gradientTensor(probabilities.shape, gradient))
    }

    /// N and K of a class-scores prediction [N, K] whose targets are N class
    /// indices ([N] or [N, 1]).
    private static func classShape(_ prediction: Tensor, _ classes: Tensor, _ loss: Loss) throws -> (Int, Int) {
        guard prediction.shape.count == 2, prediction.shape[1] > 0 else {
            throw LayerKitError.shapeMismatch(
                "\(loss.rawValue) loss: the prediction must be [N, K] class scores, got \(Tensor.describe(prediction.shape))")
        }
        let n = prediction.shape[0]
        guard classes.shape == [n] || classes.shape == [n, 1] else {
            throw LayerKitError.shapeMismatch(
                "\(loss.rawValue) loss: target \(Tensor.describe(classes.shape)) does not match prediction "
                + "\(Tensor.describe(prediction.shape)): expected \(n) class indices, shape \(n) or \(n)x1")
        }
        guard n > 0 else {
            throw LayerKitError.shapeMismatch("\(loss.rawValue) loss: the prediction \(Tensor.describe(prediction.shape)) is empty")
        }
        return (n, prediction.shape[1])
    }

    /// Target `i` as a class index in 0..<k.
    private static func classIndex(_ classes: Tensor, _ i: Int, _ k: Int, _ loss: Loss) throws -> Int {
        let value = classes[i]
        guard value.rounded() == value, value >= 0, value < Float(k) else {
            throw LayerKitError.invalidParameter(
                "\(loss.rawValue) loss: target \(i) is \(value), not a class index in 0..<\(k) (a whole number)")
        }
        return Int(value)
    }
}
