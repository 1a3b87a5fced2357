import Foundation
import Testing
@testable import LayerKit

/// The per-element layers' backward passes: against Double references on
/// the CPU, and the GPU against the CPU (parity rule, fp16-rounded inputs,
/// bit-identical when repeated).
@Suite(.enabled(if: TestGPU.isEnabled))
struct ElementwiseGradientTests {
    static let shape = [2, 3, 4, 4]
    static var channels: Int { shape[1] }
    static var plane: Int { shape[2] * shape[3] }

    /// The case as a layer: the catalog op with its parameters, or the
    /// formula; PRelu's slope per channel.
    static func layer(_ test: DerivativeCase) throws -> ElementwiseLayer {
        guard let definition = test.definition else {
            return try FormulaLayer(formula: test.formula.description, parameters: test.values)
        }
        let layer = try ElementwiseLayer(definition: definition, parameters: test.parameters)
        let weights = definition.values.filter { $0.defaultValue == nil }.map(\.name)
        if !weights.isEmpty {
            try layer.setWeightData(weights.map { _ in Self.channelValues.withUnsafeBufferPointer { Data(buffer: $0) } })
        }
        return layer
    }

    static let channelValues: [Float] = [0.25, -0.5, 0.75]

    /// fp16 inputs at least 1e-3 from every kink in x, filling `shape`.
    static func input(_ test: DerivativeCase) throws -> Tensor {
        let points = test.smoothPoints(.input, from: test.points.map(fp16Rounded))
        let count = shape.reduce(1, *)
        return try Tensor(shape: shape, values: (0..<count).map { points.isEmpty ? 0 : points[$0 % points.count] })
    }

    static func step(_ layer: ElementwiseLayer, _ x: Tensor, _ g: Tensor, on backend: Backend) throws -> (LayerGradients, GradientRunner) {
        let y = try backend.run(layer, inputs: [x]).outputs[0]
        let runner = GradientRunner(backend: backend)
        let step = GradientStep(inputs: [x], outputs: [y], outputGradients: [g], needsInputGradients: [true],
                                parameterRoles: Set(layer.trainableParameters.map(\.role)))
        return (try layer.gradients(of: step, on: runner), runner)
    }

    /// Every catalog op (default and example parameters) and every user
    /// formula: CPU input gradient = g * central difference (Double) within
    /// float32 accuracy; GPU within the parity rule of the CPU; the GPU run
    /// twice gives the same bits; the derivative and product ran on the GPU.
    @Test func everyPerElementBackwardAgreesAcrossBackends() throws {
        let cpu = try Backend(computeUnits: .cpuOnly)
        let gpu = try Backend(computeUnits: .gpu, context: try TestGPU.get(), notice: { _ in })
        let g = try Tensor.uniform(shape: Self.shape, in: -1...1, seed: 4).roundedToHalf()
        var worstCPU = 0.0, worstGPU = 0.0
        for test in DerivativeCase.catalog + DerivativeCase.user {
            let layer = try Self.layer(test)
            let x = try Self.input(test)
            let (onCPU, _) = try Self.step(layer, x, g, on: cpu)
            let (onGPU, runner) = try Self.step(layer, x, g, on: gpu)
            let (again, _) = try Self.step(layer, x, g, on: gpu)
            let (gxCPU, gxGPU) = (try #require(onCPU.inputs[0]), try #require(onGPU.inputs[0]))
            for i in 0..<x.count {
                var values = test.doubleValues
                for parameter in layer.trainableParameters {
                    values[parameter.role] = Double(parameter.value[(i / Self.plane) % Self.channels])
                }
                let expected = Double(g[i]) * DoubleFormula.centralDifference(test.formula, .input, x: Double(x[i]), values: values)
                let error = Swift.abs(Double(gxCPU[i]) - expected) / Swift.max(1, Swift.abs(expected))
                worstCPU = Swift.max(worstCPU, error)
                #expect(error <= 1e-4, "\(test) CPU at x = \(x[i]): \(gxCPU[i]) vs \(expected)")
            }
            let report = try ParityReport(gpu: gxGPU, cpu: gxCPU)
            worstGPU = Swift.max(worstGPU, report.maxRelError)
            #expect(report.passed, "\(test) GPU input gradient: \(report)")
            #expect(zip(gxGPU.values, try #require(again.inputs[0]).values).allSatisfy(sameFloat), "\(test) repeated")
            for (role, value) in onCPU.parameters {
                let parity = try ParityReport(gpu: try #require(onGPU.parameters[role]), cpu: value)
                #expect(parity.passed, "\(test) GPU d/d\(role): \(parity)")
                #expect(zip(onGPU.parameters[role]!.values, again.parameters[role]!.values).allSatisfy(sameFloat))
            }
            let derivative = runner.placements.filter { $0.work.hasSuffix("'") || $0.work == "Mul" }
            #expect(!derivative.isEmpty && derivative.allSatisfy { $0.placement == .gpu },
                    "\(test): \(runner.placements.map { "\($0.work) \($0.placement)" })")
        }
        print("per-element backward: CPU worst error / max(1, |g f'|) \(worstCPU), GPU worst parity error \(worstGPU)")
    }

    /// Swish with per-channel beta on [2, 5, 3, 3]: dx and dbeta against the
    /// derivative written out in Double (naive loops); the GPU within the
    /// parity rule; `replacingParameters` gives a Swish with the new betas.
    @Test func swishLearnsItsBetaPerChannel() throws {
        let shape = [2, 5, 3, 3]
        let betas: [Float] = [0.5, 1, 1.5, 2.5, -0.75]
        let swish = try Swish()
        try swish.setWeightData([betas.withUnsafeBufferPointer { Data(buffer: $0) }])
        #expect(swish.trainableParameters.map(\.role) == ["beta"])
        #expect(swish.trainableParameters.map(\.nodeInput) == [1])
        let x = try Tensor.uniform(shape: shape, in: -4...4, seed: 21).roundedToHalf()
        let g = try Tensor.uniform(shape: shape, in: -1...1, seed: 22).roundedToHalf()
        var expectedX = [Double](repeating: 0, count: x.count)
        var expectedBeta = [Double](repeating: 0, count: 5), scale = [Double](repeating: 0, count: 5)
        for n in 0..<2 {
            for c in 0..<5 {
                for p in 0..<9 {
                    let i = (n * 5 + c) * 9 + p
                    let (v, b, gi) = (Double(x[i]), Double(betas[c]), Double(g[i]))
                    let s = 1 / (1 + Foundation.exp(-b * v))
                    expectedX[i] = gi * (s + b * v * s * (1 - s))
                    expectedBeta[c] += gi * v * v * s * (1 - s)
                    scale[c] += Swift.abs(gi * v * v * s * (1 - s))
                }
            }
        }
        let cpu = try Backend(computeUnits: .cpuOnly)
        let (gradients, _) = try Self.step(swish, x, g, on: cpu)
        let gx = try #require(gradients.inputs[0])
        for i in 0..<x.count {
            #expect(Swift.abs(Double(gx[i]) - expectedX[i]) <= 1e-5 * Swift.max(1, Swift.abs(expectedX[i])), "dx \(i)")
        }
        let gBeta = try #require(gradients.parameters["beta"])
        #expect(gBeta.shape == [5])
        for c in 0..<5 {
            #expect(Swift.abs(Double(gBeta[c]) - expectedBeta[c]) <= 1e-5 * Swift.max(1, scale[c]),
                    "dbeta[\(c)] \(gBeta[c]) vs \(expectedBeta[c])")
        }
        let gpu = try Backend(computeUnits: .gpu, context: try TestGPU.get(), notice: { _ in })
        let (onGPU, runner) = try Self.step(swish, x, g, on: gpu)
        let (again, _) = try Self.step(swish, x, g, on: gpu)
        #expect(try ParityReport(gpu: try #require(onGPU.inputs[0]), cpu: gx).passed)
        let gpuBeta = try #require(onGPU.parameters["beta"])
        for c in 0..<5 {
            // The GPU's slopes are stored in fp16, so the sum's error is relative to the sum of |terms|.
            #expect(Swift.abs(Double(gpuBeta[c]) - Double(gBeta[c])) <= 1e-3 * Swift.max(1, scale[c]), "GPU dbeta[\(c)]")
        }
        #expect(zip(gpuBeta.values, try #require(again.parameters["beta"]).values).allSatisfy(sameFloat))
        // The per-channel sum of products runs on the CPU, one pass over g and dy/dbeta.
        #expect(runner.placements.contains { $0.work == "Swish' times the gradient, summed per channel" && !$0.placement.isGPU },
                "\(runner.placements)")

        let updated = try #require(try swish.replacingParameters(["beta": try Tensor(shape: [5], values: [1, 2, 3, 4, 5])]) as? Swish)
        #expect(updated.channelBeta == [1, 2, 3, 4, 5])
        #expect(swish.channelBeta == betas)
    }

    /// Linear's per-channel scale and bias: each gradient against the sum of
    /// g times a central difference in that channel's value (Double).
    @Test func perChannelValuesOfSeveralNamesGetTheirOwnGradients() throws {
        let linear = try FormulaDerivativeLayers.op("Linear")
        let (scales, biases): ([Float], [Float]) = ([2, -1, 0.5], [0.25, -0.5, 1])
        try linear.setWeightData([scales, biases].map { $0.withUnsafeBufferPointer { Data(buffer: $0) } })
        #expect(linear.trainableParameters.map(\.role) == ["scale", "bias"])
        #expect(linear.trainableParameters.map(\.nodeInput) == [1, 2])
        let x = try Tensor.uniform(shape: Self.shape, in: -3...3, seed: 5)
        let g = try Tensor.uniform(shape: Self.shape, in: -1...1, seed: 6)
        let (gradients, _) = try Self.step(linear, x, g, on: try Backend(computeUnits: .cpuOnly))
        for role in ["scale", "bias"] {
            var expected = [Double](repeating: 0, count: 3)
            for i in 0..<x.count {
                let c = (i / Self.plane) % Self.channels
                let point = ["scale": Double(scales[c]), "bias": Double(biases[c])]
                expected[c] += Double(g[i]) * DoubleFormula.centralDifference(linear.formula, .value(role), x: Double(x[i]), values: point)
            }
            let actual = try #require(gradients.parameters[role])
            for c in 0..<3 {
                #expect(Swift.abs(Double(actual[c]) - expected[c]) <= 1e-4 * Swift.max(1, Swift.abs(expected[c])), "\(role)[\(c)]")
            }
        }
    }

    /// A fused chain's input gradient (the chain rule as one formula, a
    /// per-channel slope among its values) on both backends, against the
    /// layers' own backward passes applied in reverse.
    @Test func aFusedChainBackpropagatesLikeItsLayersInReverse() throws {
        let prelu = try FormulaDerivativeLayers.op("PRelu")
        try prelu.setWeightData([Self.channelValues.withUnsafeBufferPointer { Data(buffer: $0) }])
        let layers = [try FormulaDerivativeLayers.op("Linear", ["scale": "2", "bias": "-0.5"]), prelu,
                      try FormulaDerivativeLayers.op("Swish", ["beta": "0.5"]), try FormulaDerivativeLayers.op("Tanh")]
        let fused = try FusedLayer(layers)
        let x = try Tensor.uniform(shape: Self.shape, in: -3...3, seed: 7).roundedToHalf()
        let g = try Tensor.uniform(shape: Self.shape, in: -1...1, seed: 8).roundedToHalf()
        let cpu = try Backend(computeUnits: .cpuOnly)
        var forward = [x]
        for layer in layers { forward.append(try cpu.run(layer, inputs: [forward.last!]).outputs[0]) }
        var expected = g
        for (index, layer) in layers.enumerated().reversed() {
            let step = GradientStep(inputs: [forward[index]], outputs: [forward[index + 1]], outputGradients: [expected],
                                    needsInputGradients: [true], parameterRoles: [])
            expected = try #require(try layer.gradients(of: step, on: GradientRunner(backend: cpu)).inputs[0])
        }
        let step = GradientStep(inputs: [x], outputs: [forward.last!], outputGradients: [g], needsInputGradients: [true],
                                parameterRoles: [])
        let onCPU = try #require(try fused.gradients(of: step, on: GradientRunner(backend: cpu)).inputs[0])
        for i in 0..<x.count {
            #expect(Swift.abs(onCPU[i] - expected[i]) <= 1e-5 * Swift.max(1, Swift.abs(expected[i])), "\(i)")
        }
        let gpu = try Backend(computeUnits: .gpu, context: try TestGPU.get(), notice: { _ in })
        let onGPU = try #require(try fused.gradients(of: step, on: GradientRunner(backend: gpu)).inputs[0])
        #expect(try ParityReport(gpu: onGPU, cpu: onCPU).passed)
        #expect(fused.trainableParameters.isEmpty)
    }

    /// Unknown roles and wrong sizes are errors naming them; nil output
    /// gradients give zero gradients.
    @Test func badRequestsAreClearErrors() throws {
        let prelu = try FormulaDerivativeLayers.op("PRelu")
        try prelu.setWeightData([Self.channelValues.withUnsafeBufferPointer { Data(buffer: $0) }])
        #expect { try prelu.replacingParameters(["alpha": try Tensor(shape: [3])]) } throws: {
            "\($0)".contains("no trainable parameter 'alpha'") && "\($0)".contains("slope")
        }
        #expect { try prelu.replacingParameters(["slope": try Tensor(shape: [4])]) } throws: {
            "\($0)".contains("4 values for 3 channels")
        }
        let x = try Tensor.uniform(shape: Self.shape, in: -1...1, seed: 1)
        let cpu = GradientRunner(backend: try Backend(computeUnits: .cpuOnly))
        let unknown = GradientStep(inputs: [x], outputs: [x], outputGradients: [x], needsInputGradients: [false],
                                   parameterRoles: ["beta"])
        #expect { try prelu.gradients(of: unknown, on: cpu) } throws: { "\($0)".contains("no per-channel value 'beta'") }
        let zero = GradientStep(inputs: [x], outputs: [x], outputGradients: [nil], needsInputGradients: [true],
                                parameterRoles: ["slope"])
        let gradients = try prelu.gradients(of: zero, on: cpu)
        #expect(try #require(gradients.inputs[0]).values.allSatisfy { $0 == 0 })
        #expect(try #require(gradients.parameters["slope"]).values == [0, 0, 0])
        let replaced = try #require(try prelu.replacingParameters(["slope": try Tensor(shape: [3], values: [1, 2, 3])]) as? ElementwiseLayer)
        #expect(replaced.channelValues["slope"] == [1, 2, 3])
        #expect(prelu.channelValues["slope"] == Self.channelValues)
    }
}

enum FormulaDerivativeLayers {
    static func op(_ name: String, _ parameters: [String: String] = [:]) throws -> ElementwiseLayer {
        let definition = try #require(OpDefinition.catalog.first { $0.name == name })
        return try ElementwiseLayer(definition: definition, parameters: parameters)
    }
}
