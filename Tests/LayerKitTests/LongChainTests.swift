import Foundation
import Testing
@testable import LayerKit

/// Long fused chains compile in bounded pieces: the driver's compile time
/// grows faster than linearly in a kernel's size (FormulaChain.maxStagesPerKernel),
/// so the bound is on what each kernel holds, not on a clock.
struct LongChainTests {
    static func layers(_ name: String, _ count: Int, _ parameters: [String: String] = [:]) throws -> [ElementwiseLayer] {
        let definition = try #require(OpDefinition.catalog.first { $0.name == name })
        return try (0..<count).map { _ in try ElementwiseLayer(definition: definition, parameters: parameters) }
    }

    /// 2,000 Tanh stages: 32 pieces of at most 64 stages, two distinct
    /// kernels, each a few KB of GLSL; the whole chain as one kernel (what
    /// ran before) is 60 times larger, which the bound catches.
    @Test func aLongChainIsSplitIntoBoundedKernels() throws {
        let chain = try FusedLayer(try Self.layers("Tanh", 2000)).chain
        let pieces = try chain.gpuPieces()
        #expect(pieces.count == 32)
        let stageCounts = pieces.map { $0.kernel.name.split(separator: "+").count }
        #expect(stageCounts.reduce(0, +) == 2000 && stageCounts.allSatisfy { $0 <= 64 }, "\(stageCounts)")
        let bound = 16_000  // GLSL characters per kernel: 64 stages of ~80 characters, twice over
        let sizes = pieces.map { $0.kernel.body.count + $0.kernel.functions.count }
        #expect(sizes.allSatisfy { $0 <= bound }, "\(sizes)")
        #expect(Set(pieces.map(\.kernel)).count == 2)
        // Negative control: the chain as one kernel exceeds the bound.
        let (whole, _, _) = try chain.gpuKernel()
        #expect(whole.body.count + whole.functions.count > 10 * bound)
        // The cap is exact: 64 stages are one kernel, 65 are two.
        #expect(try FusedLayer(try Self.layers("Tanh", 64)).chain.gpuPieces().count == 1)
        #expect(try FusedLayer(try Self.layers("Tanh", 65)).chain.gpuPieces().count == 2)
    }

    /// Scalar parameters also start a new piece: 20 LeakyRelu stages (one
    /// `alpha` each) are 3 kernels of at most 8 parameters, not an error.
    @Test func scalarParametersSplitKernelsToo() throws {
        let chain = try FusedLayer(try Self.layers("LeakyRelu", 20, ["alpha": "0.5"])).chain
        let pieces = try chain.gpuPieces()
        #expect(pieces.map(\.parameters.count) == [8, 8, 4])
        #expect(pieces.allSatisfy { $0.parameters.allSatisfy { $0 == 0.5 } })
    }

    /// The 2,000-stage chain on the GPU (32 dispatches) and the CPU against
    /// tanh applied 2,000 times in float64, and against each other; the
    /// 20-stage LeakyRelu chain against 0.5^20 x for negative x.
    @Test(.enabled(if: TestGPU.isEnabled)) func longChainsMatchFloat64OnBothBackends() throws {
        let context = try TestGPU.get()
        let input = try Tensor.uniform(shape: [2, 5, 3, 4], in: -3...3, seed: 14).roundedToHalf()
        let cases: [(FusedLayer, (Double) -> Double)] = [
            (try FusedLayer(try Self.layers("Tanh", 2000)), { x in (0..<2000).reduce(x) { y, _ in Foundation.tanh(y) } }),
            (try FusedLayer(try Self.layers("LeakyRelu", 20, ["alpha": "0.5"])), { x in x >= 0 ? x : x * pow(0.5, 20) }),
        ]
        for (layer, reference) in cases {
            let gpu = try Backend(computeUnits: .gpu, context: context).run(layer, inputs: [input]).outputs[0]
            let cpu = try Backend(computeUnits: .cpuOnly).run(layer, inputs: [input]).outputs[0]
            let expected = try Tensor(shape: input.shape, values: input.values.map { Float(reference(Double($0))) })
            let cpuReport = try ParityReport(gpu: cpu, cpu: expected, tolerance: 1e-4)
            let gpuReport = try ParityReport(gpu: gpu, cpu: cpu)
            #expect(cpuReport.passed, "\(layer.layers.count) stages, CPU vs float64: max rel \(cpuReport.maxRelError)")
            #expect(gpuReport.passed, "\(layer.layers.count) stages, GPU vs CPU: max rel \(gpuReport.maxRelError)")
        }
    }
}
