import Foundation
import Testing
@testable import LayerKit

/// The Swish layer's Core ML-shaped API and its errors.
struct SwishLayerTests {
    @Test func parametersAreReadAndCheckedLikeCoreML() throws {
        #expect(try Swish(parameters: [:]).beta == 1)
        #expect(try Swish(parameters: ["beta": 0.5]).beta == 0.5)
        #expect(try Swish(parameters: ["beta": 2]).beta == 2)
        #expect(try Swish(parameters: ["beta": NSNumber(value: 0.25)]).beta == 0.25)
        #expect(throws: LayerKitError.self) { try Swish(parameters: ["alpha": 1.0]) }
        #expect(throws: LayerKitError.self) { try Swish(parameters: ["beta": "fast"]) }
        #expect(throws: LayerKitError.self) { try Swish(parameters: ["beta": Double.nan]) }
    }

    @Test func weightsMustBeWholeFloatsInOneBlob() throws {
        let layer = try Swish()
        #expect(throws: LayerKitError.self) { try layer.setWeightData([Data(count: 23)]) }
        #expect(throws: LayerKitError.self) { try layer.setWeightData([Data()]) }
        #expect(throws: LayerKitError.self) { try layer.setWeightData([Data(count: 24), Data(count: 24)]) }
        // The article's case: 6 channels = 24 bytes, little-endian Float32.
        var bytes = Data()
        for beta: Float in [1, 2, 3, 4, 5, 6] { withUnsafeBytes(of: beta.bitPattern.littleEndian) { bytes.append(contentsOf: $0) } }
        try layer.setWeightData([bytes])
        #expect(layer.channelBeta == [1, 2, 3, 4, 5, 6])
    }

    @Test func perChannelBetaMustMatchTheChannelsOnCPU() throws {
        let layer = try Swish()
        try layer.setWeightData([Data(count: 24)])
        let input = try Tensor(shape: [1, 5, 2, 2])
        #expect(throws: LayerKitError.self) {
            try layer.evaluate(inputs: [input], outputs: [Tensor(shape: [1, 5, 2, 2])])
        }
    }

    @Test func perChannelBetaAppliesPerChannelOnCPU() throws {
        // Channel c has beta c: compare against float64 math per element.
        let layer = try Swish()
        let betas: [Float] = [0.5, 1, 2]
        try layer.setWeightData([betas.withUnsafeBufferPointer { Data(buffer: $0) }])
        let input = try Tensor.uniform(shape: [2, 3, 4, 5], in: -6...6, seed: 3)
        let output = try Tensor(shape: input.shape)
        try layer.evaluate(inputs: [input], outputs: [output])
        for i in 0..<input.count {
            let beta = Double(betas[(i / 20) % 3])
            let x = Double(input[i])
            let reference = x / (1 + exp(-beta * x))
            #expect(abs(Double(output[i]) - reference) <= 1e-5 * max(abs(reference), 1e-30))
        }
    }

    @Test func registryFindsSwishCaseInsensitively() throws {
        #expect(try LayerRegistry.shared.makeLayer(named: "swish") is Swish)
        #expect(try LayerRegistry.shared.makeLayer(named: "SWISH", parameters: ["beta": 2]) is Swish)
        #expect(throws: LayerKitError.unknownOp("unknown op 'Swoosh' (did you mean 'Swish'?): no layer is registered by that name")) {
            try LayerRegistry.shared.entry(named: "Swoosh")
        }
    }
}
