import Foundation
import Testing
@testable import LayerKit
import VulkanCompute

/// Formula layers and fused chains against the catalog's built-ins and
/// against running layers one by one.
@Suite(.enabled(if: TestGPU.isEnabled))
struct FormulaLayerTests {
    /// Every catalog op written as a formula (its own printed text) computes
    /// what the built-in does: CPU within 1e-6, GPU within parity.
    @Test func everyCatalogOpAsAFormulaAgreesWithTheBuiltIn() throws {
        let context = try TestGPU.get()
        for definition in OpDefinition.catalog {
            let formulas = definition.choice.map { $0.options.map(\.formula) } ?? [definition.formula]
            for (index, formula) in formulas.enumerated() {
                let defaults = definition.values.reduce(into: [String: Float]()) { $0[$1.name] = $1.defaultValue ?? 0.5 }
                let perChannel = definition.values.filter { $0.defaultValue == nil }.map(\.name)
                let layer = try FormulaLayer(formula: formula.description, name: "\(definition.name)Formula",
                                             parameters: defaults.filter { !perChannel.contains($0.key) },
                                             weightNames: perChannel)
                var builtinParameters: [String: String] = [:]
                if let choice = definition.choice { builtinParameters[choice.name] = choice.options[index].word }
                let builtin = try ElementwiseLayer(definition: definition, parameters: builtinParameters)
                if !perChannel.isEmpty {
                    let blob = [Float](repeating: 0.5, count: 3).withUnsafeBufferPointer { Data(buffer: $0) }
                    try layer.setWeightData([blob])
                    try builtin.setWeightData([blob])
                }
                let input = try Tensor.uniform(shape: [2, 3, 5, 7], in: definition.inputRange, seed: 9).roundedToHalf()
                let cpu = try Backend(computeUnits: .cpuOnly)
                let mine = try cpu.run(layer, inputs: [input]).outputs[0]
                let theirs = try cpu.run(builtin, inputs: [input]).outputs[0]
                for i in 0..<input.count {
                    #expect(mismatch(mine[i], theirs[i], tolerance: 1e-6) == nil, "\(definition.name) x=\(input[i])")
                }
                let gpu = try Backend(computeUnits: .gpu, context: context).run(layer, inputs: [input]).outputs[0]
                #expect(try ParityReport(gpu: gpu, cpu: theirs).passed, "\(definition.name) on the GPU")
            }
        }
    }

    static func op(_ name: String, _ parameters: [String: String] = [:]) throws -> ElementwiseLayer {
        let definition = try #require(OpDefinition.catalog.first { $0.name == name })
        return try ElementwiseLayer(definition: definition, parameters: parameters)
    }

    /// Chains fused into one layer equal the same layers run one by one.
    @Test(arguments: [3, 6])
    func fusedChainsEqualSequentialRuns(channels: Int) throws {
        let prelu = try Self.op("PRelu")
        try prelu.setWeightData([(0..<channels).map { Float($0) * 0.1 }.withUnsafeBufferPointer { Data(buffer: $0) }])
        let chains: [[ElementwiseLayer]] = [
            [try Self.op("Linear", ["scale": "2", "bias": "-0.5"]), try Self.op("Swish", ["beta": "0.5"]), try Self.op("Tanh")],
            [try Self.op("Elu"), try Self.op("Mish"), try Self.op("Clip", ["min": "-1", "max": "6"])],
            [try FormulaLayer(formula: "x * x - 1"), prelu, try Self.op("Swish"), try Self.op("Swish")],
        ]
        let context = try TestGPU.get()
        let input = try Tensor.uniform(shape: [2, channels, 6, 5], in: -4...4, seed: 11).roundedToHalf()
        for layers in chains {
            let fused = try FusedLayer(layers)
            for backend in try [Backend(computeUnits: .cpuOnly), Backend(computeUnits: .gpu, context: context)] {
                let once = try backend.run(fused, inputs: [input]).outputs[0]
                var sequential = input
                for layer in layers { sequential = try backend.run(layer, inputs: [sequential]).outputs[0] }
                let report = try ParityReport(gpu: once, cpu: sequential)
                #expect(report.passed, "\(fused.layerName) on \(backend.computeUnits): max rel \(report.maxRelError)")
            }
        }
    }

    @Test func aFusedChainIsOneDispatch() throws {
        let fused = try FusedLayer([try Self.op("Linear", ["scale": "2"]), try Self.op("Swish"), try Self.op("Tanh")])
        let (kernel, parameters, _) = try fused.chain.gpuKernel()
        #expect(kernel.body == "lk_stage2(lk_stage1(lk_stage0(x)))")
        #expect(parameters == [2, 0, 1])
        #expect(fused.layerName == "Linear+Swish+Tanh")
    }

    @Test func aSecondUseOfAFormulaCompilesNothing() throws {
        // A device of its own, and a kernel name of its own: tests beside
        // this one compile and create pipelines too.
        let context = try GPUContext(validation: true)
        let input = try Tensor.uniform(shape: [1, 4, 3, 3], in: -1...1, seed: 1)
        let run = { try Backend(computeUnits: .gpu, context: context)
            .run(FormulaLayer(formula: "x * 0.25 + sin(x)", name: "CacheProbe"), inputs: [input]) }
        let kernel = "CacheProbe (elementwise.comp)"
        _ = try run()
        #expect(ShaderCompiler.shared.compileCount(name: kernel) == 1)
        let pipelines = context.pipelineCount
        _ = try run()
        #expect(ShaderCompiler.shared.compileCount(name: kernel) == 1)
        #expect(context.pipelineCount == pipelines)
    }

    @Test func registeredFormulasWorkLikeBuiltIns() throws {
        try LayerRegistry.shared.register(formula: "x * tanh(softplus(beta * x))", named: "ScaledMish",
                                          parameters: ["beta": 1])
        let layer = try LayerRegistry.shared.makeLayer(named: "scaledmish", parameters: ["beta": "2"])
        let input = try Tensor(shape: [1, 1, 1, 2], values: [-1, 1])
        let output = try Backend(computeUnits: .cpuOnly).run(layer, inputs: [input]).outputs[0]
        for i in 0..<2 {
            let x = Double(input[i])
            let reference = x * Foundation.tanh(Foundation.log1p(Foundation.exp(2 * x)))
            #expect(abs(Double(output[i]) - reference) <= 1e-6)
        }
    }
}
