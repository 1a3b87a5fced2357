import Foundation
import Testing
@testable import LayerKit

/// `WeightForms`: a layer remade with new parameters takes over its
/// predecessor's GPU weight buffers, and `weight_gather.comp` rewrites them
/// from a parameter buffer; they must then hold, bit for bit, what an
/// upload of the new values arranged on the host
/// (`Convolution.arrangedForDevice`) would, for every convolution form
/// (dense with a block of output slices, depthwise, grouped) and Gemm's 1x1
/// form, and a second step must move no byte and create no buffer.
@Suite struct DeviceWeightsTests {
    /// A layer and an input shape to prepare it for, and its parameters by role.
    struct Case: Sendable, CustomStringConvertible {
        let description: String
        let make: @Sendable ([String: Tensor]) throws -> Layer
        let shapes: [String: [Int]]
        let inputShape: [Int]
    }

    static let cases: [Case] = [
        Case(description: "dense 6->10 3x3", make: { try Convolution(weights: $0["weights"]!, bias: $0["bias"],
                                                                     padding: .explicit([1, 1, 1, 1])) },
             shapes: ["weights": [10, 6, 3, 3], "bias": [10]], inputShape: [2, 6, 9, 9]),
        Case(description: "depthwise 8 3x3", make: { try Convolution(weights: $0["weights"]!, bias: $0["bias"], group: 8) },
             shapes: ["weights": [8, 1, 3, 3], "bias": [8]], inputShape: [1, 8, 6, 6]),
        Case(description: "grouped 8->6 in 2", make: { try Convolution(weights: $0["weights"]!, bias: $0["bias"], group: 2) },
             shapes: ["weights": [6, 4, 1, 1], "bias": [6]], inputShape: [1, 8, 4, 4]),
        Case(description: "Gemm 12->7, B transposed", make: { try Gemm(b: $0["B"]!, c: $0["C"], transB: true) },
             shapes: ["B": [7, 12], "C": [7]], inputShape: [3, 12]),
    ]

    /// The values of `shapes` for `step`, drawn from a seed.
    static func values(_ shapes: [String: [Int]], step: UInt64) throws -> [String: Tensor] {
        var values: [String: Tensor] = [:]
        for (k, (role, shape)) in shapes.sorted(by: { $0.key < $1.key }).enumerated() {
            values[role] = try Tensor(shape: shape, values: seededUniform(count: shape.reduce(1, *), in: -1...1,
                                                                           seed: 31 * step + UInt64(k)))
        }
        return values
    }

    /// The convolution holding `layer`'s GPU state.
    static func form(_ layer: Layer) throws -> Convolution {
        try #require((layer as? Convolution) ?? (layer as? Gemm)?.madeConvolution)
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: cases)
    func aRemadeLayerHoldsWhatAnUploadWouldHave(_ testCase: Case) throws {
        let context = try GPUContext(device: TestGPU.get().device)
        let forms = WeightForms()
        var layer = try testCase.make(Self.values(testCase.shapes, step: 0))
        try layer.prepare(on: context, inputShapes: [testCase.inputShape])
        let roles = testCase.shapes.keys.sorted()
        for step in 1...2 {
            let values = try Self.values(testCase.shapes, step: UInt64(step))
            // The parameters packed after 3 other floats, as an optimizer's buffer holds several.
            var packed: [Float] = [9, 9, 9]
            var offsets: [String: Int] = [:]
            for role in roles {
                offsets[role] = packed.count
                packed += values[role]!.elements
            }
            let device = DeviceParameters(buffer: try context.makeBuffer(floats: packed, pooled: false), context: context,
                                          offsets: offsets)
            let next = try (layer as! DifferentiableLayer).replacingParameters(values)
            let before = context.counts
            let commands = try context.makeCommandBuffer()
            let gathers = try forms.refresh(from: layer, to: next, trained: Dictionary(uniqueKeysWithValues: roles.map { ($0, $0) }),
                                            step: WeightFormStep(batchSize: 1, step: 0), device: device, commands: commands)
            try commands.commit()
            try commands.waitUntilCompleted()
            let moved = context.counts - before
            #expect(gathers == 2, "\(testCase) step \(step)")
            // The first step makes the two index maps; the second reuses them: nothing created or moved.
            #expect(moved.buffersCreated == (step == 1 ? 2 : 0) && (step == 1 || moved.bytesUploaded == 0),
                    "\(testCase) step \(step): \(moved)")
            let form = try Self.form(next)
            let states = form.gpuState.values
            #expect(states.count == 1)
            for (_, key, state) in states {
                let block = try #require(key.base as? ConvolutionBlock)
                let expected = Convolution.arrangedForDevice(weights: form.weights, bias: form.bias, group: form.group,
                                                             block: block)
                let weights = Array(try OptimizerBuffers.floats(state.weights).prefix(expected.weights.count))
                let bias = Array(try OptimizerBuffers.floats(state.bias).prefix(expected.bias.count))
                #expect(weights.map(\.bitPattern) == expected.weights.map(\.bitPattern), "\(testCase) step \(step): weights")
                #expect(bias.map(\.bitPattern) == expected.bias.map(\.bitPattern), "\(testCase) step \(step): bias")
            }
            layer = next
        }
    }

    /// fp16 weights are not re-derived: the remade layer keeps no state and
    /// its next plan uploads its weights.
    @Test(.enabled(if: TestGPU.isEnabled)) func fp16WeightsAreUploadedAgain() throws {
        let context = try GPUContext(device: TestGPU.get().device)
        let testCase = Self.cases[0]
        let layer = try testCase.make(Self.values(testCase.shapes, step: 0)) as! Convolution
        layer.gpuOptions.float16Weights = true
        try layer.prepare(on: context, inputShapes: [testCase.inputShape])
        let values = try Self.values(testCase.shapes, step: 1)
        let next = try layer.replacingParameters(values)
        let device = DeviceParameters(buffer: try context.makeBuffer(floats: values["weights"]!.values + values["bias"]!.values,
                                                                     pooled: false),
                                      context: context, offsets: ["weights": 0, "bias": values["weights"]!.count])
        let gathers = try WeightForms().refresh(from: layer, to: next, trained: ["weights": "weights", "bias": "bias"],
                                                step: WeightFormStep(batchSize: 1, step: 0), device: device,
                                                commands: context.makeCommandBuffer())
        #expect(gathers == 0 && (next as! Convolution).gpuState.values.isEmpty)
    }
}
