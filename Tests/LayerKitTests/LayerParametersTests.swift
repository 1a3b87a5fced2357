import Foundation
import Testing
import LayerKit

/// `LayerParameters` and `WeightBlob`: what a custom layer reads its
/// parameters and weights with.
struct LayerParametersTests {
    @Test func numbersOfEveryKindReadAsFloat() throws {
        let reader = LayerParameters(["d": 0.5 as Double, "f": 1.5 as Float, "i": 2, "n": NSNumber(value: 3.5), "s": "4.5"],
                                     layer: "L")
        #expect(try ["d", "f", "i", "n", "s"].map { try reader.float($0, default: 0) } == [0.5, 1.5, 2, 3.5, 4.5])
        #expect(try reader.float("absent", default: 7) == 7)
    }

    @Test func aValueThatIsNoFiniteNumberIsAnError() {
        for value in ["many", Double.infinity, 1e300, [1.0]] as [Any] {
            #expect { try LayerParameters(["x": value], layer: "MyLayer").float("x", default: 0) } throws: { error in
                "\(error)".hasPrefix("MyLayer: parameter 'x' must be a finite number")
            }
        }
    }

    @Test func unknownParametersAreNamedWithTheKnownOnes() throws {
        try LayerParameters(["gain": 1], layer: "MyLayer").requireOnly(["gain", "bias"])
        #expect(throws: LayerKitError.invalidParameter("MyLayer: unknown parameter 'gian' (known: gain)")) {
            try LayerParameters(["gian": 1], layer: "MyLayer").requireOnly(["gain"])
        }
        #expect(throws: LayerKitError.invalidParameter("MyLayer: unknown parameter 'a' (known: none)")) {
            try LayerParameters(["a": 1], layer: "MyLayer").requireOnly([])
        }
    }

    @Test func weightBlobsAreLittleEndianFloat32() throws {
        let values: [Float] = [1, -2.5, .pi]
        let blob = values.withUnsafeBufferPointer { Data(buffer: $0) }
        #expect(try WeightBlob.float32Values(blob, what: "w") == values)
        for bad in [Data(), Data([0, 0, 128])] {
            #expect(throws: LayerKitError.invalidWeights("w: \(bad.count) bytes is not a whole number of Float32 values")) {
                try WeightBlob.float32Values(bad, what: "w")
            }
        }
    }
}
