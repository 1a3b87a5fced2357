import Foundation
import Testing
@testable import LayerKit

/// SGD, Adam and AdamW on the CPU against a float64 loop written here from
/// PyTorch's documented updates; gradient clipping and the schedules against
/// float64 math; the state's export and import (a resumed run equals the
/// uninterrupted one bit for bit); and the errors.
struct OptimizerTests {
    static let shapes: [String: [Int]] = ["w": [2, 3], "b": [3], "gemm/B:0": [4]]
    static let steps = 8

    static func initial() throws -> [String: Tensor] {
        var seed: UInt64 = 10
        var values: [String: Tensor] = [:]
        for name in shapes.keys.sorted() {
            seed += 1
            let shape = shapes[name]!
            values[name] = try Tensor(shape: shape, values: seededUniform(count: shape.reduce(1, *), in: -1...1, seed: seed))
        }
        return values
    }

    /// The gradient of every parameter at `step`: fixed values, not a model's.
    static func gradients(step: Int) throws -> [String: Tensor] {
        var gradients: [String: Tensor] = [:]
        for (k, name) in shapes.keys.sorted().enumerated() {
            let shape = shapes[name]!
            gradients[name] = try Tensor(shape: shape, values: seededUniform(
                count: shape.reduce(1, *), in: -0.8...0.8, seed: UInt64(100 + 10 * step + k)))
        }
        return gradients
    }

    /// PyTorch's update for one element stream, in Double, from the formulas
    /// of torch.optim's documentation (not LayerKit's code): state is
    /// (momentum buffer or m, v), t counts this parameter's steps.
    struct Reference {
        let c: OptimizerConfiguration
        var p: [Double]
        var b: [Double]? = nil
        var m: [Double]
        var v: [Double]
        var t = 0

        init(_ configuration: OptimizerConfiguration, _ values: [Float]) {
            c = configuration
            p = values.map(Double.init)
            m = [Double](repeating: 0, count: values.count)
            v = m
        }

        mutating func step(_ gradient: [Double], lr: Double) {
            t += 1
            switch c.algorithm {
            case .sgd:
                let g = p.indices.map { gradient[$0] + c.weightDecay * p[$0] }
                var d = g
                if c.momentum != 0 {
                    let buffer = b.map { old in p.indices.map { c.momentum * old[$0] + (1 - c.dampening) * g[$0] } } ?? g
                    b = buffer
                    d = c.nesterov ? p.indices.map { g[$0] + c.momentum * buffer[$0] } : buffer
                }
                p = p.indices.map { p[$0] - lr * d[$0] }
            case .adam, .adamw:
                for i in p.indices {
                    var g = gradient[i]
                    if c.algorithm == .adamw { p[i] -= lr * c.weightDecay * p[i] } else { g += c.weightDecay * p[i] }
                    m[i] = c.beta1 * m[i] + (1 - c.beta1) * g
                    v[i] = c.beta2 * v[i] + (1 - c.beta2) * g * g
                    let mHat = m[i] / (1 - pow(c.beta1, Double(t)))
                    let vHat = v[i] / (1 - pow(c.beta2, Double(t)))
                    // PyTorch's eps sits outside sqrt(v / (1 - beta2^t)).
                    p[i] -= lr * mHat / (vHat.squareRoot() + c.epsilon)
                }
            }
        }
    }

    static let configurations: [OptimizerConfiguration] = [
        .sgd(learningRate: 0.1),
        .sgd(learningRate: 0.05, momentum: 0.9, dampening: 0.1, weightDecay: 0.01),
        .sgd(learningRate: 0.05, momentum: 0.8, nesterov: true, weightDecay: 0.001),
        .adam(learningRate: 0.01),
        .adam(learningRate: 0.01, beta1: 0.8, beta2: 0.99, epsilon: 1e-6, weightDecay: 0.05),
        .adam(learningRate: 0.02, beta1: 0.3, beta2: 0.9),
        .adamW(learningRate: 0.01, weightDecay: 0.1),
    ]

    /// |Δ| allowed between 8 Float32 steps and the float64 reference.
    static func tolerance(_ reference: Double) -> Double { 1e-6 * max(1, abs(reference)) }

    @Test(arguments: configurations.indices)
    func stepsFollowPyTorchsUpdate(_ index: Int) throws {
        let configuration = Self.configurations[index]
        let optimizer = try Optimizer(configuration)
        #expect(optimizer.placement == .cpu(reason: nil))
        var parameters = try Self.initial()
        var references = parameters.mapValues { Reference(configuration, $0.values) }
        for step in 0..<Self.steps {
            let gradients = try Self.gradients(step: step)
            parameters = try optimizer.step(parameters: parameters, gradients: gradients)
            for name in references.keys {
                references[name]!.step(gradients[name]!.values.map(Double.init), lr: configuration.learningRate)
                for (i, expected) in references[name]!.p.enumerated() {
                    let actual = Double(parameters[name]![i])
                    #expect(abs(actual - expected) <= Self.tolerance(expected),
                            "\(configuration.algorithm) #\(index) step \(step) \(name)[\(i)]: \(actual) vs \(expected)")
                }
            }
        }
        #expect(optimizer.stepCount == Self.steps)
        let state = optimizer.exportState()
        for (name, reference) in references {
            #expect(state.integers["\(name).step"] == Self.steps)
            let moments: [(String, [Double]?)] = configuration.algorithm == .sgd
                ? [("momentum_buffer", reference.b)] : [("exp_avg", reference.m), ("exp_avg_sq", reference.v)]
            for (key, expected) in moments {
                guard let expected else { #expect(state.tensors["\(name).\(key)"] == nil); continue }
                let actual = try #require(state.tensors["\(name).\(key)"])
                for i in expected.indices { #expect(abs(Double(actual[i]) - expected[i]) <= Self.tolerance(expected[i])) }
            }
        }
    }

    /// The parameters given are not changed: new tensors come back.
    @Test func aStepLeavesItsInputsAlone() throws {
        let parameters = try Self.initial()
        let before = parameters.mapValues(\.values)
        let after = try Optimizer(.sgd(learningRate: 0.1)).step(parameters: parameters, gradients: Self.gradients(step: 0))
        #expect(parameters.mapValues(\.values) == before)
        #expect(after.mapValues(\.values) != before)
    }

    @Test func clippingScalesByTheTotalNorm() throws {
        let gradients = try Self.gradients(step: 3)
        var squares = 0.0
        for name in gradients.keys { for g in gradients[name]!.values { squares += Double(g) * Double(g) } }
        let norm = squares.squareRoot()
        #expect(abs(GradientClipping.totalNorm(gradients) - norm) <= 1e-15 * norm)
        let clipped = try GradientClipping.clip(gradients, maxNorm: norm / 4)
        #expect(clipped.totalNorm == GradientClipping.totalNorm(gradients))
        let scale = (norm / 4) / (norm + 1e-6)
        for (name, gradient) in gradients {
            for i in 0..<gradient.count {
                #expect(clipped.gradients[name]![i] == Float(Double(gradient[i]) * scale))
            }
        }
        #expect(abs(GradientClipping.totalNorm(clipped.gradients) - norm / 4) <= 1e-6 * norm)
        // Under the limit: the same tensors.
        let kept = try GradientClipping.clip(gradients, maxNorm: norm * 2)
        #expect(kept.gradients.keys.allSatisfy { kept.gradients[$0]! === gradients[$0]! })
        #expect(throws: LayerKitError.self) { try GradientClipping.clip(gradients, maxNorm: 0) }
    }

    /// Clipping configured in the optimizer: the step equals a step on the
    /// clipped gradients, and the norm is reported.
    @Test func theOptimizerClipsBeforeItsUpdate() throws {
        var configuration = OptimizerConfiguration.adam(learningRate: 0.01)
        configuration.maxGradientNorm = 0.3
        let clipping = try Optimizer(configuration)
        let plain = try Optimizer(.adam(learningRate: 0.01))
        let gradients = try Self.gradients(step: 0)
        let clipped = try GradientClipping.clip(gradients, maxNorm: 0.3)
        let a = try clipping.step(parameters: Self.initial(), gradients: gradients)
        let b = try plain.step(parameters: Self.initial(), gradients: clipped.gradients)
        #expect(a.mapValues(\.values) == b.mapValues(\.values))
        #expect(clipping.lastGradientNorm == clipped.totalNorm)
    }

    @Test func schedulesFollowTheirClosedForms() {
        for epoch in 0..<12 {
            #expect(LearningRateSchedule.constant.learningRate(base: 0.1, epoch: epoch) == 0.1)
            let step = LearningRateSchedule.step(stepSize: 3, gamma: 0.5).learningRate(base: 0.1, epoch: epoch)
            var expected = 0.1
            for e in 1...max(1, epoch) where e <= epoch && e % 3 == 0 { expected *= 0.5 }
            #expect(abs(step - expected) <= 1e-15)
            let cosine = LearningRateSchedule.cosine(maxEpochs: 5, minimum: 0.001).learningRate(base: 0.1, epoch: epoch)
            #expect(abs(cosine - (0.001 + 0.099 * 0.5 * (1 + cos(Double.pi * Double(epoch) / 5)))) <= 1e-15)
        }
        #expect(LearningRateSchedule.cosine(maxEpochs: 5, minimum: 0.001).learningRate(base: 0.1, epoch: 5) == 0.001)
    }

    /// The schedule moves with `finishEpoch()`, not with steps.
    @Test func theOptimizerUsesTheEpochsLearningRate() throws {
        var configuration = OptimizerConfiguration.sgd(learningRate: 0.1)
        configuration.schedule = .step(stepSize: 1, gamma: 0.5)
        let optimizer = try Optimizer(configuration)
        let parameters = try Self.initial()
        let gradients = try Self.gradients(step: 0)
        _ = try optimizer.step(parameters: parameters, gradients: gradients)
        #expect(optimizer.learningRate == 0.1)
        optimizer.finishEpoch()
        #expect(optimizer.learningRate == 0.05)
        let after = try optimizer.step(parameters: parameters, gradients: gradients)
        for (name, p) in parameters {
            for i in 0..<p.count { #expect(after[name]![i] == p[i] + Float(-0.05) * gradients[name]![i]) }
        }
    }

    /// 4 steps, export, a new optimizer imports, 4 more: the same bits as 8
    /// uninterrupted steps, for every algorithm (Adam's per-parameter step
    /// and the epoch included).
    @Test(arguments: configurations.indices)
    func aResumedRunEqualsTheUninterruptedOne(_ index: Int) throws {
        var configuration = Self.configurations[index]
        configuration.schedule = .cosine(maxEpochs: 4, minimum: 0.001)
        func run(_ optimizer: Optimizer, _ steps: Range<Int>, _ start: [String: Tensor]) throws -> [String: Tensor] {
            var parameters = start
            for step in steps {
                parameters = try optimizer.step(parameters: parameters, gradients: Self.gradients(step: step))
                if step % 2 == 1 { optimizer.finishEpoch() }
            }
            return parameters
        }
        let whole = try run(Optimizer(configuration), 0..<8, Self.initial())
        let first = try Optimizer(configuration)
        let half = try run(first, 0..<4, Self.initial())
        let state = first.exportState()
        _ = try first.step(parameters: half, gradients: Self.gradients(step: 9))  // the export is a copy
        let second = try Optimizer(configuration)
        try second.importState(state)
        #expect(second.epoch == 2 && second.stepCount == 4)
        let resumed = try run(second, 4..<8, half)
        #expect(resumed.mapValues { $0.values.map(\.bitPattern) } == whole.mapValues { $0.values.map(\.bitPattern) })
    }

    @Test func reconfigureKeepsTheState() throws {
        let optimizer = try Optimizer(.adam(learningRate: 0.01))
        _ = try optimizer.step(parameters: Self.initial(), gradients: Self.gradients(step: 0))
        try optimizer.reconfigure(.adam(learningRate: 0.001))
        #expect(optimizer.learningRate == 0.001)
        #expect(optimizer.exportState().integers["w.step"] == 1)
        #expect(throws: LayerKitError.invalidParameter(
            "optimizer: cannot change from adam to sgd with state of 3 parameters")) {
            try optimizer.reconfigure(.sgd(learningRate: 0.1))
        }
    }

    @Test func badGradientsAreNamedAndChangeNothing() throws {
        let optimizer = try Optimizer(.adam(learningRate: 0.01))
        let parameters = try Self.initial()
        var gradients = try Self.gradients(step: 0)
        gradients["gemm/B:1"] = gradients["gemm/B:0"]
        #expect(throws: LayerKitError.invalidParameter(
            "optimizer: a gradient for 'gemm/B:1', which is not a parameter (did you mean 'gemm/B:0'?)")) {
            try optimizer.step(parameters: parameters, gradients: gradients)
        }
        gradients["gemm/B:1"] = nil
        gradients["b"] = nil
        #expect(throws: LayerKitError.invalidParameter("optimizer: no gradient for parameter 'b'")) {
            try optimizer.step(parameters: parameters, gradients: gradients)
        }
        gradients["b"] = try Tensor(shape: [1, 3])
        #expect(throws: LayerKitError.shapeMismatch("optimizer: the gradient of 'b' is 1x3, the parameter 3")) {
            try optimizer.step(parameters: parameters, gradients: gradients)
        }
        let nan = try Tensor(shape: [3], values: [0, .nan, 0])
        gradients["b"] = nan
        #expect(throws: LayerKitError.invalidParameter("optimizer: the gradient of parameter 'b' is nan at element 1")) {
            try optimizer.step(parameters: parameters, gradients: gradients)
        }
        #expect(optimizer.stepCount == 0 && optimizer.exportState().tensors.isEmpty)
        // A parameter whose shape changed under its state.
        _ = try optimizer.step(parameters: parameters, gradients: Self.gradients(step: 0))
        var reshaped = parameters
        reshaped["b"] = try Tensor(shape: [1, 3])
        var matching = try Self.gradients(step: 1)
        matching["b"] = try Tensor(shape: [1, 3])
        #expect(throws: LayerKitError.shapeMismatch("optimizer: the state of 'b' is 3, the parameter 1x3")) {
            try optimizer.step(parameters: reshaped, gradients: matching)
        }
    }

    @Test func badConfigurationsAndStatesAreRefused() throws {
        #expect(throws: LayerKitError.invalidParameter("sgd: Nesterov momentum needs momentum > 0 and dampening 0")) {
            try Optimizer(.sgd(learningRate: 0.1, nesterov: true))
        }
        #expect(throws: LayerKitError.invalidParameter("adam: beta2 1.0, must be in [0, 1)")) {
            try Optimizer(.adam(beta2: 1))
        }
        #expect(throws: LayerKitError.invalidParameter("sgd: learning rate -0.1, must be finite and >= 0")) {
            try Optimizer(.sgd(learningRate: -0.1))
        }
        #expect(throws: LayerKitError.invalidParameter("step schedule: step size 0, must be at least 1")) {
            var configuration = OptimizerConfiguration.sgd(learningRate: 0.1)
            configuration.schedule = .step(stepSize: 0, gamma: 0.1)
            return try Optimizer(configuration)
        }
        let adam = try Optimizer(.adam())
        _ = try adam.step(parameters: Self.initial(), gradients: Self.gradients(step: 0))
        let state = adam.exportState()
        #expect(throws: LayerKitError.invalidParameter("optimizer state is adam's, this optimizer is adamw")) {
            try Optimizer(.adamW()).importState(state)
        }
        var broken = state
        broken.tensors["w.exp_avg_sq"] = nil
        #expect(throws: LayerKitError.invalidParameter(
            "adam optimizer state of w: needs w.exp_avg, w.exp_avg_sq and w.step")) {
            try Optimizer(.adam()).importState(broken)
        }
        broken = state
        broken.tensors["w.momentum_buffer"] = try Tensor(shape: [2, 3])
        #expect(throws: LayerKitError.invalidParameter(
            "adam optimizer state: unknown tensor 'w.momentum_buffer' (expected NAME.exp_avg or NAME.exp_avg_sq)")) {
            try Optimizer(.adam()).importState(broken)
        }
        broken = state
        broken.integers["epoch"] = nil
        #expect(throws: LayerKitError.invalidParameter("optimizer state: needs integers step and epoch, at least 0")) {
            try Optimizer(.adam()).importState(broken)
        }
        // Issue 27: a count the optimizer goes on counting from would trap at 2^63 - 1 (`w.step + 1`).
        for key in ["w.step", "step", "epoch"] {
            broken = state
            broken.integers[key] = .max
            #expect(throws: LayerKitError.invalidParameter(
                "optimizer state: \(key) is 9223372036854775807; expected a count from 0 to 9007199254740992 (2^53)")) {
                try Optimizer(.adam()).importState(broken)
            }
        }
        #expect(throws: LayerKitError.invalidParameter(
            "epochs is 1152921504606846976; expected a count from 0 to 9007199254740992 (2^53)")) {
            try TrainingConfiguration(loss: .meanSquaredError, optimizer: .sgd(learningRate: 0.1), epochs: 1 << 60).validate()
        }
    }

    @Test func theRawValuesAreTheCommandLineNames() {
        #expect(OptimizerConfiguration.Algorithm.allCases.map(\.rawValue) == ["sgd", "adam", "adamw"])
        #expect(OptimizerConfiguration.adamW().weightDecay == 0.01)
        #expect(OptimizerConfiguration(algorithm: .adam, learningRate: 0.1).weightDecay == 0)
    }
}
