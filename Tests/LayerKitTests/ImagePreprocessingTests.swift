import Foundation
import Testing
@testable import LayerKit

struct ImagePreprocessingTests {
    /// Bilinear with half-pixel centres, from its definition in float64.
    static func reference(_ plane: [Double], _ h: Int, _ w: Int, _ outH: Int, _ outW: Int) -> [Double] {
        func source(_ o: Int, _ outSize: Int, _ inSize: Int) -> (Int, Int, Double) {
            let s = max(0, (Double(o) + 0.5) * Double(inSize) / Double(outSize) - 0.5)
            let low = min(Int(s.rounded(.down)), inSize - 1)
            return (low, min(low + 1, inSize - 1), s - Double(low))
        }
        return (0..<outH).flatMap { y in
            (0..<outW).map { x in
                let (y0, y1, fy) = source(y, outH, h), (x0, x1, fx) = source(x, outW, w)
                let top = plane[y0 * w + x0] * (1 - fx) + plane[y0 * w + x1] * fx
                let bottom = plane[y1 * w + x0] * (1 - fx) + plane[y1 * w + x1] * fx
                return top * (1 - fy) + bottom * fy
            }
        }
    }

    @Test(arguments: [(3, 5, 7, 2), (4, 4, 4, 4), (2, 3, 9, 11), (6, 1, 1, 6)])
    func resizeIsBilinearWithHalfPixelCentres(_ h: Int, _ w: Int, _ outH: Int, _ outW: Int) throws {
        let values = seededUniform(count: 2 * h * w, in: 0...1, seed: UInt64(h * 31 + w))
        let image = try Tensor(shape: [1, 2, h, w], values: values)
        let resized = try image.resized(width: outW, height: outH)
        #expect(resized.shape == [1, 2, outH, outW])
        for c in 0..<2 {
            let expected = Self.reference(values[c * h * w..<(c + 1) * h * w].map(Double.init), h, w, outH, outW)
            for (i, e) in expected.enumerated() {
                #expect(abs(Double(resized[c * outH * outW + i]) - e) <= 1e-6)
            }
        }
    }

    @Test func normalizationsParseAndApply() throws {
        let image = try Tensor(shape: [1, 3, 1, 2], values: [0, 1, 0.5, 0.25, 1, 0])
        #expect(try image.normalized(PixelNormalization(parsing: "0,1")).values == image.values)
        #expect(try image.normalized(PixelNormalization(parsing: "-1,1")).values == [-1, 1, 0, -0.5, 1, -1])
        let imagenet = try PixelNormalization(parsing: "mean=0.5,0.25,0,std=0.5,0.25,2")
        #expect(try image.normalized(imagenet).values == [-1, 1, 1, 0, 0.5, 0])
        #expect(try image.normalized(PixelNormalization(parsing: "mean=0.5,std=0.5")).values == [-1, 1, 0, -0.5, 1, -1])
        for bad in ["1,2", "mean=1", "mean=0.5,std=0", "mean=a,std=1", "std=1,mean=0", "mean=,std=1"] {
            // The library's message names the text, in its own terms (the CLI adds "--normalize: ").
            #expect("\(bad)") { _ = try PixelNormalization(parsing: bad) } throws: { error in
                "\(error)".hasPrefix("pixel normalization '\(bad)': ") && !"\(error)".contains("--")
            }
        }
        // Per-channel values must match the channels.
        #expect(throws: LayerKitError.self) {
            _ = try image.normalized(PixelNormalization(parsing: "mean=0,0,std=1,1"))
        }
    }
}
