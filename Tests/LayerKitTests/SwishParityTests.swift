import Foundation
import Testing
@testable import LayerKit

/// GPU Swish against the CPU evaluator on the same fp16-rounded inputs, with
/// the parity rule `|gpu - cpu| <= 1e-3 * max(1, |cpu|)`.
@Suite(.enabled(if: TestGPU.isEnabled))
struct SwishParityTests {
    enum Beta: CustomTestStringConvertible, Sendable {
        case scalar(Float)
        case perChannel
        var testDescription: String {
            switch self {
            case .scalar(let beta): "beta \(beta)"
            case .perChannel: "per-channel beta"
            }
        }
    }

    static let betas: [Beta] = [.scalar(1), .scalar(0.01), .scalar(3), .perChannel]
    static let channelCounts = [1, 3, 4, 5, 6, 8, 13]
    static let sizes = [(1, 1), (7, 5), (64, 64), (256, 256)]

    /// Seeded uniform [-10, 10], its first elements replaced by values that
    /// stress the formula: zeros, tiny values, fp16 subnormals and the fp16 limits.
    static func input(shape: [Int], seed: UInt64) throws -> Tensor {
        let tensor = try Tensor.uniform(shape: shape, in: -10...10, seed: seed)
        let specials: [Float] = [0, -0.0, 1e-7, -1e-7, 6e-8, -6e-8, 1e-4, -1e-4,
                                 65504, -65504, 60000, -60000, 32768, -32768, 11, -11]
        for (i, value) in specials.prefix(tensor.count).enumerated() { tensor[i] = value }
        return try tensor.roundedToHalf()
    }

    static func layer(_ beta: Beta, channels: Int) throws -> Swish {
        switch beta {
        case .scalar(let value):
            return try Swish(beta: value)
        case .perChannel:
            let layer = try Swish()
            let betas = (0..<channels).map { Float($0 % 5) * 0.75 + 0.1 }  // 0.1 ... 3.1
            try layer.setWeightData([betas.withUnsafeBufferPointer { Data(buffer: $0) }])
            return layer
        }
    }

    @Test(arguments: betas, channelCounts)
    func gpuMatchesCPU(beta: Beta, channels: Int) throws {
        let gpuBackend = try Backend(computeUnits: .gpu, context: try TestGPU.get())
        let cpuBackend = try Backend(computeUnits: .cpuOnly)
        let layer = try Self.layer(beta, channels: channels)
        for batch in [1, 2] {
            for (height, width) in Self.sizes {
                let shape = [batch, channels, height, width]
                let input = try Self.input(shape: shape, seed: UInt64(channels * 1000 + batch * 10 + height))
                let gpuRun = try gpuBackend.run(layer, inputs: [input])
                #expect(gpuRun.placement == .gpu)
                let cpu = try cpuBackend.run(layer, inputs: [input]).outputs[0]
                let report = try ParityReport(gpu: gpuRun.outputs[0], cpu: cpu)
                // Where every output is below fp16's smallest normal (a 1x1 image of the
                // tiny specials only), fp16 storage keeps it to subnormal precision: parity
                // must say the values were lost, and only there.
                let allTiny = cpu.values.allSatisfy { abs($0) < HalfRange.smallestNormal }
                #expect(report.valuesLost == (allTiny && report.nmse > ParityReport.maxNMSE))
                #expect(report.failures == 0 && report.nonFiniteMismatches == 0 && (allTiny || report.passed), """
                    \(Tensor.describe(shape)) \(beta.testDescription): max rel \(report.maxRelError), \
                    \(report.failures) failures, \(report.nonFiniteMismatches) non-finite
                    """)
            }
        }
    }

    @Test func paddingLanesStayZeroAfterADispatch() throws {
        let context = try TestGPU.get()
        // x + 1 maps the zero padding to 1 unless the template masks it.
        let kernel = PerElementKernel(name: "PlusOne", body: "x + 1.0")
        for channels in [1, 5, 6, 13] {
            let input = try context.upload(Tensor.uniform(shape: [2, channels, 3, 5], in: -1...1, seed: 7))
            let output = try context.makeSliceImage(batch: 2, featureChannels: channels, height: 3, width: 5)
            let commands = try context.makeCommandBuffer()
            try commands.dispatch(kernel, input: input, output: output)
            try commands.commit()
            try commands.waitUntilCompleted()
            let lanes = try TestGPU.rawLanes(of: output)
            let texelsPerLayer = 15
            for layer in 0..<output.texture.layers {
                for texel in 0..<texelsPerLayer {
                    for lane in 0..<4 {
                        let value = lanes[(layer * texelsPerLayer + texel) * 4 + lane]
                        let isPadding = (layer % output.slices) * 4 + lane >= channels
                        #expect(isPadding ? value.bitPattern == 0 : value != 0,
                                "channels \(channels) layer \(layer) lane \(lane): \(value)")
                    }
                }
            }
        }
    }

    @Test func perChannelBetaOfWrongLengthIsAnErrorOnGPU() throws {
        let gpuBackend = try Backend(computeUnits: .gpu, context: try TestGPU.get())
        let layer = try Self.layer(.perChannel, channels: 5)
        #expect(throws: LayerKitError.self) {
            try gpuBackend.run(layer, inputs: [Tensor(shape: [1, 6, 2, 2])])
        }
    }

    @Test func glslErrorsNameTheKernelAndLine() throws {
        let context = try TestGPU.get()
        let image = try context.makeSliceImage(batch: 1, featureChannels: 4, height: 1, width: 1)
        let commands = try context.makeCommandBuffer()
        do {
            try commands.dispatch(PerElementKernel(name: "Broken", body: "x + undefinedThing"),
                                  input: image, output: image)
            Issue.record("a broken kernel compiled")
        } catch {
            let message = "\(error)"
            #expect(message.contains("Broken (elementwise.comp):"), "\(message)")
            #expect(message.contains("undefinedThing"), "\(message)")
        }
    }
}
