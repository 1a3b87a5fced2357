import Foundation
import Testing
@testable import LayerKit

/// Each loss's value against a naive float64 formula written here, and its
/// gradient against float64 central differences of that formula; the
/// stable forms at extreme logits against their closed forms; and the errors
/// for targets that do not fit.
struct LossTests {
    /// |Δ| allowed between LayerKit's Float32 gradient and the float64 one.
    static func gradientTolerance(_ g: Double) -> Double { 1e-8 + 1e-6 * abs(g) }

    /// Checks `loss` on `prediction` against `naive` (the loss as a
    /// function of the prediction's values, in Double): the value, and the
    /// gradient by central differences of `naive`.
    func check(_ loss: Loss, prediction: Tensor, target: Tensor, naive: ([Double]) -> Double) throws {
        let result = try loss.evaluate(prediction: prediction, target: target)
        let x = prediction.values.map(Double.init)
        let expected = naive(x)
        #expect(abs(result.value - expected) <= 1e-12 * max(1, abs(expected)), "\(loss): \(result.value) vs \(expected)")
        #expect(result.gradient.shape == prediction.shape)
        var worst = 0.0
        for i in x.indices {
            let h = 1e-6
            var up = x, down = x
            up[i] += h
            down[i] -= h
            let numeric = (naive(up) - naive(down)) / (2 * h)
            let error = abs(Double(result.gradient[i]) - numeric)
            worst = max(worst, error / Self.gradientTolerance(numeric))
            #expect(error <= Self.gradientTolerance(numeric), "\(loss) gradient \(i): \(result.gradient[i]) vs \(numeric)")
        }
        #expect(worst <= 1)
    }

    static let logits = seededUniform(count: 4 * 5, in: -3...3, seed: 1)
    static let classes: [Float] = [2, 0, 4, 1]

    @Test func crossEntropyFromLogits() throws {
        let naive = { (x: [Double]) -> Double in
            var total = 0.0
            for i in 0..<4 {
                var sum = 0.0
                for j in 0..<5 { sum += exp(x[i * 5 + j]) }
                total += -log(exp(x[i * 5 + Int(Self.classes[i])]) / sum)
            }
            return total / 4
        }
        for targetShape in [[4], [4, 1]] {
            try check(.crossEntropy, prediction: Tensor(shape: [4, 5], values: Self.logits),
                      target: Tensor(shape: targetShape, values: Self.classes), naive: naive)
        }
    }

    /// Logits of 1000 overflow a naive exp; the fused form subtracts the
    /// row's maximum: loss log(1 + e^-1) for [1000, 1001] with target 1.
    @Test func crossEntropyIsStableAtLargeLogits() throws {
        let result = try Loss.crossEntropy.evaluate(prediction: Tensor(shape: [1, 2], values: [1000, 1001]),
                                                    target: Tensor(shape: [1], values: [1]))
        let expected = log(1 + exp(-1.0))
        #expect(abs(result.value - expected) <= 1e-12)
        let p0 = exp(-1.0) / (1 + exp(-1.0))
        #expect(abs(Double(result.gradient[0]) - p0) <= 1e-7)
        // The target's gradient is softmax - 1 = -p0.
        #expect(abs(Double(result.gradient[1]) + p0) <= 1e-7)
    }

    @Test func crossEntropyFromProbabilities() throws {
        // Softmax of the logits, in Double, rounded to Float32: the probabilities a softmax layer gives.
        var probabilities = [Float](repeating: 0, count: 20)
        for i in 0..<4 {
            let row = (0..<5).map { exp(Double(Self.logits[i * 5 + $0])) }
            for j in 0..<5 { probabilities[i * 5 + j] = Float(row[j] / row.reduce(0, +)) }
        }
        try check(.crossEntropyFromProbabilities, prediction: Tensor(shape: [4, 5], values: probabilities),
                  target: Tensor(shape: [4], values: Self.classes)) { p in
            (0..<4).reduce(0) { $0 - log(p[$1 * 5 + Int(Self.classes[$1])]) } / 4
        }
    }

    /// A probability of 0 is clamped to the floor: loss -log(1e-7) / N,
    /// gradient -1 / (N * 1e-7), finite.
    @Test func crossEntropyFromProbabilitiesClampsZero() throws {
        let result = try Loss.crossEntropyFromProbabilities.evaluate(
            prediction: Tensor(shape: [2, 2], values: [1, 0, 0.5, 0.5]), target: Tensor(shape: [2], values: [1, 0]))
        #expect(abs(result.value - (-log(1e-7) - log(0.5)) / 2) <= 1e-12)
        #expect(result.gradient.values == [0, Float(-1 / (2 * 1e-7)), Float(-1 / (2 * 0.5)), 0])
    }

    static let predictions = seededUniform(count: 2 * 3 * 2, in: -2...2, seed: 2)
    static let targets = seededUniform(count: 2 * 3 * 2, in: -2...2, seed: 3)

    @Test func meanSquaredError() throws {
        try check(.meanSquaredError, prediction: Tensor(shape: [2, 3, 2], values: Self.predictions),
                  target: Tensor(shape: [2, 3, 2], values: Self.targets)) { p in
            p.indices.reduce(0) { $0 + pow(p[$1] - Double(Self.targets[$1]), 2) } / 12
        }
    }

    @Test func l1() throws {
        try check(.l1, prediction: Tensor(shape: [2, 3, 2], values: Self.predictions),
                  target: Tensor(shape: [2, 3, 2], values: Self.targets)) { p in
            p.indices.reduce(0) { $0 + abs(p[$1] - Double(Self.targets[$1])) } / 12
        }
    }

    /// sign(0) = 0: an exact prediction gets no gradient.
    @Test func l1HasNoGradientAtAnExactPrediction() throws {
        let result = try Loss.l1.evaluate(prediction: Tensor(shape: [3], values: [1, 2, -1]),
                                          target: Tensor(shape: [3], values: [1, 0, 0]))
        #expect(result.gradient.values == [0, Float(1.0 / 3), Float(-1.0 / 3)])
        #expect(abs(result.value - 1) <= 1e-15)
    }

    @Test func binaryCrossEntropyWithLogits() throws {
        // Soft targets in [0, 1] against logits in [-2, 2]; targets [N] against predictions [N, 1].
        let labels = seededUniform(count: 6, in: 0...1, seed: 4)
        let logits = Array(Self.predictions.prefix(6))
        try check(.binaryCrossEntropyWithLogits, prediction: Tensor(shape: [6, 1], values: logits),
                  target: Tensor(shape: [6], values: labels)) { x in
            x.indices.reduce(0) { total, i in
                let s = 1 / (1 + exp(-x[i]))
                let t = Double(labels[i])
                return total - (t * log(s) + (1 - t) * log(1 - s))
            } / 6
        }
    }

    /// At logits of ±100 the naive log(sigmoid) is log(0); the stable form
    /// gives the exact 100 (wrong side) and ~e^-100 (right side).
    @Test func binaryCrossEntropyIsStableAtLargeLogits() throws {
        let result = try Loss.binaryCrossEntropyWithLogits.evaluate(
            prediction: Tensor(shape: [2], values: [100, -100]), target: Tensor(shape: [2], values: [0, 0]))
        #expect(abs(result.value - (100 + 2 * log1p(exp(-100.0))) / 2) <= 1e-12)
        #expect(result.gradient.values == [0.5, Float(exp(-100.0) / (1 + exp(-100.0)) / 2)])
    }

    @Test func targetsThatDoNotFitNameBothShapes() throws {
        let logits = try Tensor(shape: [4, 5], values: Self.logits)
        #expect(throws: LayerKitError.shapeMismatch(
            "ce loss: target 3 does not match prediction 4x5: expected 4 class indices, shape 4 or 4x1")) {
            try Loss.crossEntropy.evaluate(prediction: logits, target: Tensor(shape: [3], values: [0, 1, 2]))
        }
        #expect(throws: LayerKitError.shapeMismatch(
            "mse loss: target 4x4 does not match prediction 4x5 (16 target values for 20 predictions)")) {
            try Loss.meanSquaredError.evaluate(prediction: logits, target: Tensor(shape: [4, 4]))
        }
        // Same count, other extents: still a mismatch.
        #expect(throws: LayerKitError.self) {
            try Loss.l1.evaluate(prediction: logits, target: Tensor(shape: [5, 4]))
        }
        #expect(throws: LayerKitError.shapeMismatch(
            "ce loss: the prediction must be [N, K] class scores, got 20")) {
            try Loss.crossEntropy.evaluate(prediction: Tensor(shape: [20], values: Self.logits),
                                           target: Tensor(shape: [20]))
        }
    }

    @Test func badClassIndicesAreNamed() throws {
        let logits = try Tensor(shape: [4, 5], values: Self.logits)
        #expect(throws: LayerKitError.invalidParameter(
            "ce loss: target 2 is 5.0, not a class index in 0..<5 (a whole number)")) {
            try Loss.crossEntropy.evaluate(prediction: logits, target: Tensor(shape: [4], values: [0, 1, 5, 2]))
        }
        #expect(throws: LayerKitError.invalidParameter(
            "ce loss: target 0 is 1.5, not a class index in 0..<5 (a whole number)")) {
            try Loss.crossEntropy.evaluate(prediction: logits, target: Tensor(shape: [4], values: [1.5, 1, 2, 2]))
        }
        #expect(throws: LayerKitError.invalidParameter(
            "ce loss: target 3 is -1.0, not a class index in 0..<5 (a whole number)")) {
            try Loss.crossEntropy.evaluate(prediction: logits, target: Tensor(shape: [4], values: [0, 1, 2, -1]))
        }
    }

    @Test func nanIsAnError() throws {
        var values = Self.logits
        values[7] = .nan
        #expect(throws: LayerKitError.invalidParameter("ce loss: the prediction 4x5 holds nan at element 7")) {
            try Loss.crossEntropy.evaluate(prediction: Tensor(shape: [4, 5], values: values),
                                           target: Tensor(shape: [4], values: Self.classes))
        }
        #expect(throws: LayerKitError.invalidParameter("bce loss: the target 2 holds inf at element 1")) {
            try Loss.binaryCrossEntropyWithLogits.evaluate(prediction: Tensor(shape: [2]),
                                                           target: Tensor(shape: [2], values: [0, .infinity]))
        }
        #expect(throws: LayerKitError.self) {
            try Loss.crossEntropyFromProbabilities.evaluate(prediction: Tensor(shape: [1, 2], values: [1.5, -0.5]),
                                                            target: Tensor(shape: [1], values: [0]))
        }
    }

    /// The CLI's names.
    @Test func theRawValuesAreTheCommandLineNames() {
        #expect(Loss.allCases.map(\.rawValue) == ["ce", "ce-probabilities", "mse", "l1", "bce"])
    }
}
