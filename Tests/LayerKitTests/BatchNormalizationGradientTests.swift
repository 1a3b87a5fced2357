import Foundation
import Testing
@testable import LayerKit

/// BatchNormalization's backward passes (frozen and training mode) against
/// float64 references: the frozen derivative's loops, and float64 central
/// differences of a float64 training-mode forward pass; the running
/// statistics against PyTorch's update rule in float64.
struct BatchNormalizationGradientTests {
    static let shape = [4, 3, 5, 5]
    static let epsilon: Float = 1e-5

    /// A frozen layer with seeded parameters (variance in [0.5, 2]).
    static func layer(seed: UInt64, half: Bool = false) throws -> BatchNormalization {
        let channels = shape[1]
        return try BatchNormalization(
            scale: OpLayerTest.tensor([channels], seed: seed, in: 0.5...1.5, half: half),
            bias: OpLayerTest.tensor([channels], seed: seed + 1, in: -1...1, half: half),
            mean: OpLayerTest.tensor([channels], seed: seed + 2, in: -0.5...0.5, half: half),
            variance: OpLayerTest.tensor([channels], seed: seed + 3, in: 0.5...2, half: half), epsilon: epsilon)
    }

    /// Channel of element i of an `[N, C, H, W]` tensor.
    static func channel(_ i: Int) -> Int { i / (shape[2] * shape[3]) % shape[1] }

    @Test func frozenGradientsMatchTheFloat64Loops() throws {
        let layer = try Self.layer(seed: 131)
        let x = try OpLayerTest.tensor(Self.shape, seed: 135, in: -2...2)
        let step = try DenseGradientTest.step(layer, [x], seed: 136, roles: ["scale", "B"])
        let gradients = try layer.gradients(of: step, on: cpuRunner())
        let dy = step.outputGradients[0]!
        var dx = [Double](repeating: 0, count: x.count), dScale = [0.0, 0, 0], dB = [0.0, 0, 0]
        for i in 0..<x.count {
            let c = Self.channel(i)
            let r = 1 / (Double(layer.variance[c]) + Double(Self.epsilon)).squareRoot()
            dx[i] = Double(dy[i]) * Double(layer.scale[c]) * r
            dScale[c] += Double(dy[i]) * (Double(x[i]) - Double(layer.mean[c])) * r
            dB[c] += Double(dy[i])
        }
        DenseGradientTest.expect(gradients.inputs[0], dx, shape: Self.shape, "frozen dx")
        DenseGradientTest.expect(gradients.parameters["scale"], dScale, shape: [3], "frozen dscale")
        DenseGradientTest.expect(gradients.parameters["B"], dB, shape: [3], "frozen dB")
        #expect(layer.trainableParameters.map(\.role) == ["scale", "B"])
        #expect(layer.trainableParameters.map(\.nodeInput) == [1, 2])
    }

    /// The training-mode forward pass in float64.
    static func trainingForward(_ x: [Double], scale: [Double], bias: [Double]) -> [Double] {
        let count = Double(x.count / shape[1])
        var mean = [0.0, 0, 0], variance = [0.0, 0, 0]
        for i in x.indices { mean[channel(i)] += x[i] / count }
        for i in x.indices { variance[channel(i)] += (x[i] - mean[channel(i)]) * (x[i] - mean[channel(i)]) / count }
        return x.indices.map { i in
            let c = channel(i)
            return scale[c] * (x[i] - mean[c]) / (variance[c] + Double(epsilon)).squareRoot() + bias[c]
        }
    }

    @Test func trainingGradientsMatchFloat64CentralDifferences() throws {
        let frozen = try Self.layer(seed: 141)
        let layer = try TrainingBatchNormalization(frozen)
        let x = try OpLayerTest.tensor(Self.shape, seed: 145, in: -2...2)
        let step = try DenseGradientTest.step(layer, [x], seed: 146, roles: ["scale", "B"])
        let dy = step.outputGradients[0]!.values.map(Double.init)
        let (xs, scale, bias) = (x.values.map(Double.init), frozen.scale.values.map(Double.init), frozen.bias.values.map(Double.init))
        // The forward output against the float64 one.
        DenseGradientTest.expect(step.outputs[0], Self.trainingForward(xs, scale: scale, bias: bias), shape: Self.shape, "y")
        let loss = { (x: [Double], scale: [Double], bias: [Double]) in
            zip(dy, Self.trainingForward(x, scale: scale, bias: bias)).reduce(0) { $0 + $1.0 * $1.1 }
        }
        let h = 1e-6
        func difference(_ values: [Double], _ evaluate: ([Double]) -> Double) -> [Double] {
            values.indices.map { i in
                var (up, down) = (values, values)
                up[i] += h
                down[i] -= h
                return (evaluate(up) - evaluate(down)) / (2 * h)
            }
        }
        let gradients = try layer.gradients(of: step, on: cpuRunner())
        let dx = difference(xs) { loss($0, scale, bias) }
        let dScale = difference(scale) { loss(xs, $0, bias) }, dB = difference(bias) { loss(xs, scale, $0) }
        let errors = [DenseGradientTest.expect(gradients.inputs[0], dx, shape: Self.shape, "training dx"),
                      DenseGradientTest.expect(gradients.parameters["scale"], dScale, shape: [3], "training dscale"),
                      DenseGradientTest.expect(gradients.parameters["B"], dB, shape: [3], "training dB")]
        #expect(errors.allSatisfy { $0 <= 1e-5 })
    }

    @Test func runningStatisticsFollowPyTorchsUpdate() throws {
        let frozen = try Self.layer(seed: 151)
        for momentum in [Float(0.9), 0.7] {
            let layer = try TrainingBatchNormalization(frozen, momentum: momentum)
            var runningMean = frozen.mean.values.map(Double.init), runningVariance = frozen.variance.values.map(Double.init)
            for pass in 0..<3 {
                let x = try OpLayerTest.tensor(Self.shape, seed: 155 + UInt64(pass), in: -2...3)
                _ = try OpLayerTest.cpu(layer, [x])
                // PyTorch (momentum' = 1 - momentum): running = (1 - m') running + m' batch,
                // the variance's batch value unbiased (divided by count - 1).
                let count = Double(x.count / Self.shape[1])
                var mean = [0.0, 0, 0], squares = [0.0, 0, 0]
                for i in 0..<x.count { mean[Self.channel(i)] += Double(x[i]) / count }
                for i in 0..<x.count { squares[Self.channel(i)] += pow(Double(x[i]) - mean[Self.channel(i)], 2) }
                let update = 1 - Double(momentum)
                for c in 0..<3 {
                    runningMean[c] = (1 - update) * runningMean[c] + update * mean[c]
                    runningVariance[c] = (1 - update) * runningVariance[c] + update * squares[c] / (count - 1)
                }
                DenseGradientTest.expect(try layer.runningMean, runningMean, shape: [3], tolerance: 1e-6, "mean, pass \(pass)")
                DenseGradientTest.expect(try layer.runningVariance, runningVariance, shape: [3], tolerance: 1e-6,
                                         "variance, pass \(pass)")
            }
            let frozenAgain = try layer.frozen
            #expect(frozenAgain.mean.values == (try layer.runningMean).values)
            #expect(frozenAgain.scale.values == frozen.scale.values)
        }
    }

    @Test func replacingParametersKeepsTheStatistics() throws {
        let frozen = try Self.layer(seed: 161)
        let scale = try OpLayerTest.tensor([3], seed: 162, in: 0.5...1.5)
        let replaced = try #require(try frozen.replacingParameters(["scale": scale]) as? BatchNormalization)
        #expect(replaced.scale.values == scale.values && replaced.bias.values == frozen.bias.values)
        #expect(replaced.mean.values == frozen.mean.values && replaced.variance.values == frozen.variance.values)
        let training = try TrainingBatchNormalization(frozen)
        _ = try OpLayerTest.cpu(training, [OpLayerTest.tensor(Self.shape, seed: 163)])
        let next = try #require(try training.replacingParameters(["B": scale]) as? TrainingBatchNormalization)
        #expect(next.bias.values == scale.values && next.momentum == training.momentum)
        #expect(try next.runningMean.values == training.runningMean.values)
        #expect(throws: LayerKitError.self) { try frozen.replacingParameters(["mean": scale]) }
        #expect(throws: LayerKitError.self) { try frozen.replacingParameters(["scale": try Tensor(shape: [4])]) }
    }

    @Test func badInputThrows() throws {
        let frozen = try Self.layer(seed: 171)
        let training = try TrainingBatchNormalization(frozen)
        let x = try OpLayerTest.tensor(Self.shape, seed: 172)
        // The backward pass before any forward pass.
        let outputs = [try Tensor(shape: Self.shape)]
        let orphan = GradientStep(inputs: [x], outputs: outputs, outputGradients: [outputs[0]], needsInputGradients: [true],
                                  parameterRoles: [])
        #expect(throws: LayerKitError.self) { try training.gradients(of: orphan, on: cpuRunner()) }
        for layer in [frozen, training] as [any DifferentiableLayer] {
            let step = try DenseGradientTest.step(layer, [x], seed: 173, roles: ["scale"])
            let wrong = GradientStep(inputs: step.inputs, outputs: step.outputs, outputGradients: [try Tensor(shape: [4, 3, 5])],
                                     needsInputGradients: [true], parameterRoles: ["scale"])
            #expect(throws: LayerKitError.self) { try layer.gradients(of: wrong, on: cpuRunner()) }
        }
        // One value per channel has no batch variance.
        #expect(throws: LayerKitError.self) { try OpLayerTest.cpu(training, [try Tensor(shape: [1, 3])]) }
        #expect(throws: LayerKitError.self) { try TrainingBatchNormalization(frozen, momentum: 1.5) }
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func gpuFrozenInputGradientMatchesTheCPU() throws {
        let layer = try Self.layer(seed: 181, half: true)
        let x = try OpLayerTest.tensor(Self.shape, seed: 182, in: -2...2, half: true)
        let step = try DenseGradientTest.step(layer, [x], seed: 183, roles: [], half: true)
        let gpu = try gpuRunner()
        let onGPU = try layer.gradients(of: step, on: gpu)
        let onCPU = try layer.gradients(of: step, on: cpuRunner())
        DenseGradientTest.expectParity(onGPU.inputs[0], onCPU.inputs[0], "frozen dx")
        #expect(gpu.placements.map(\.placement) == [.gpu], "\(gpu.placements)")
    }
}
