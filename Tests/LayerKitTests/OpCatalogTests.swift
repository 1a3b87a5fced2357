import Foundation
import Testing
@testable import LayerKit

/// Every catalog op against onnxruntime's outputs (the committed reference
/// vectors), on the CPU within 1e-5 and on the GPU within the parity rule.
@Suite struct OpCatalogTests {
    @Test func theReferenceVectorsCoverEveryCatalogOp() throws {
        let cases = try OpReferenceCase.load()
        for definition in OpDefinition.catalog {
            #expect(cases.contains { $0.op == definition.name }, "no reference vectors for \(definition.name)")
        }
    }

    /// Where LayerKit deliberately differs from onnxruntime: NaN in gives NaN
    /// out everywhere, but onnxruntime's ThresholdedRelu returns 0 for NaN.
    static func expected(_ reference: OpReferenceCase, _ i: Int) -> Float {
        reference.op == "ThresholdedRelu" && reference.input[i].isNaN ? .nan : reference.output[i]
    }

    @Test(arguments: OpReferenceCase.all)
    func cpuMatchesOnnxRuntime(reference: OpReferenceCase) throws {
        let input = try Tensor(shape: reference.shape, values: reference.input)
        let output = try Tensor(shape: reference.shape)
        try reference.layer().evaluate(inputs: [input], outputs: [output])
        let misses = (0..<input.count).compactMap { i in
            mismatch(output[i], Self.expected(reference, i), tolerance: 1e-5).map { "x=\(input[i]): \($0)" }
        }
        #expect(misses.isEmpty, "\(reference.id): \(misses.count) misses, e.g. \(misses.prefix(4))")
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: OpReferenceCase.all)
    func gpuMatchesOnnxRuntimeWithinParity(reference: OpReferenceCase) throws {
        let input = try Tensor(shape: reference.shape, values: reference.input)
        let run = try Backend(computeUnits: .gpu, context: TestGPU.get()).run(reference.layer(), inputs: [input])
        #expect(run.placement == .gpu)
        let gpu = run.outputs[0]
        let misses = (0..<input.count).compactMap { i -> String? in
            // The GPU stores fp16: a result that rounds past its range is an infinity.
            let value = Self.expected(reference, i)
            let expected = abs(value) >= 65520 && value.isFinite ? (value > 0 ? Float.infinity : -.infinity) : value
            return mismatch(gpu[i], expected, tolerance: 1e-3).map { "x=\(input[i]): \($0)" }
        }
        #expect(misses.isEmpty, "\(reference.id): \(misses.count) misses, e.g. \(misses.prefix(4))")
    }

    /// GPU against CPU for every op and parameter case `parity --all` runs,
    /// over channels 1, 5, 6, 8 and batch 2, on seeded inputs in each op's range.
    @Test(.enabled(if: TestGPU.isEnabled), arguments: [1, 5, 6, 8])
    func gpuMatchesCPUForEveryOp(channels: Int) throws {
        let context = try TestGPU.get()
        for definition in OpDefinition.catalog {
            var parameterSets: [[String: String]] = [[:]]
            if !definition.example.isEmpty { parameterSets.append(definition.example) }
            for parameters in parameterSets {
                let layer = try ElementwiseLayer(definition: definition, parameters: parameters)
                if !definition.weightNames.isEmpty {
                    let values = try Tensor.uniform(shape: [channels], in: 0.25...2, seed: 3).values
                    try layer.setWeightData(definition.weightNames.map { _ in
                        values.withUnsafeBufferPointer { Data(buffer: $0) }
                    })
                }
                let input = try Tensor.uniform(shape: [2, channels, 7, 9], in: definition.inputRange,
                                               seed: UInt64(channels)).roundedToHalf()
                let report = try ParityReport.compare(layer, input: input, context: context).report
                #expect(report.passed, "\(definition.name) \(parameters) channels \(channels): max rel \(report.maxRelError), non-finite \(report.nonFiniteMismatches)")
            }
        }
    }

    /// NaN in gives NaN out for every op (but the tests of NaN and the ops
    /// ONNX defines a number for), and the
    /// ops with exp or tanh inside stay finite for large |x| on both backends.
    @Test(.enabled(if: TestGPU.isEnabled))
    func nanPropagatesAndLargeInputsStayFinite() throws {
        let large: [Float] = [-65504, -100, -30, -20.5, -15.5, 15.5, 20.5, 30, 100, 65504]
        let input = try Tensor(shape: [1, 1, 1, large.count + 1], values: large + [.nan])
        let context = try TestGPU.get()
        for definition in OpDefinition.catalog {
            let layer = try ElementwiseLayer(definition: definition, parameters: [:])
            if !definition.weightNames.isEmpty {
                try layer.setWeightData(definition.weightNames.map { _ in [Float(0.5)].withUnsafeBufferPointer { Data(buffer: $0) } })
            }
            let cpu = try Backend(computeUnits: .cpuOnly).run(layer, inputs: [input]).outputs[0]
            let gpu = try Backend(computeUnits: .gpu, context: context).run(layer, inputs: [input]).outputs[0]
            // Ops whose NaN result ONNX defines otherwise (onnxruntime's Shrink gives 0).
            let defined: [String: Float] = ["Shrink": 0, "IsNaN": 1, "IsInf": 0, "Not": 0]
            if let value = defined[definition.name] {
                #expect(cpu[large.count] == value && gpu[large.count] == value, "\(definition.name)(NaN)")
            } else {
                #expect(cpu[large.count].isNaN && gpu[large.count].isNaN, "\(definition.name)(NaN)")
            }
            if ["Swish", "Sigmoid", "Tanh", "Softplus", "Mish", "Gelu", "Softsign", "Erf", "HardSwish"].contains(definition.name) {
                for i in large.indices {
                    #expect(cpu[i].isFinite && gpu[i].isFinite, "\(definition.name)(\(large[i])): cpu \(cpu[i]) gpu \(gpu[i])")
                }
            }
        }
    }

    @Test func formulasPrintAsTheyRead() {
        let x = Expr.input, beta = Expr.value("beta")
        #expect((x * .unary(.sigmoid, beta * x)).description == "x * sigmoid(beta * x)")
        #expect((x - (x - 1)).description == "x - (x - 1)")
        #expect(((x + 1) * 2).description == "(x + 1) * 2")
        #expect((-x * 3).description == "-x * 3")
        #expect(Expr.select(x > 0, x, 0.5 * x).description == "where(x > 0, x, 0.5 * x)")
    }

    @Test func parametersAndWeightsAreChecked() throws {
        let elu = try #require(OpDefinition.catalog.first { $0.name == "Elu" })
        #expect(throws: LayerKitError.self) { try ElementwiseLayer(definition: elu, parameters: ["beta": "1"]) }
        #expect(throws: LayerKitError.self) { try ElementwiseLayer(definition: elu, parameters: ["alpha": "x"]) }
        let gelu = try #require(OpDefinition.catalog.first { $0.name == "Gelu" })
        #expect(throws: LayerKitError.self) { try ElementwiseLayer(definition: gelu, parameters: ["approximate": "fast"]) }
        let prelu = try #require(OpDefinition.catalog.first { $0.name == "PRelu" })
        let layer = try ElementwiseLayer(definition: prelu, parameters: [:])
        let input = try Tensor(shape: [1, 3, 2, 2])
        // PRelu needs its slope weights, one per channel.
        #expect(throws: LayerKitError.self) { try layer.evaluate(inputs: [input], outputs: [Tensor(shape: input.shape)]) }
        try layer.setWeightData([[Float](repeating: 0.5, count: 2).withUnsafeBufferPointer { Data(buffer: $0) }])
        #expect(throws: LayerKitError.self) { try layer.evaluate(inputs: [input], outputs: [Tensor(shape: input.shape)]) }
    }
}
