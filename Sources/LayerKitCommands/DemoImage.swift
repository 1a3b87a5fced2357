import Foundation
import LayerKit

/// The demo's built-in input, drawn in code so the binary needs no files: a
/// small landscape (sky gradient, sun, hills) turned into six feature maps,
/// the way the article's Conv2D(6, 3x3) feeds Swish.
enum DemoImage {
    static let size = 96

    /// 1x3xHxW RGB in [0, 1].
    static func landscape() throws -> Tensor {
        let n = size
        let image = try Tensor(shape: [1, 3, n, n])
        for y in 0..<n {
            for x in 0..<n {
                let u = Float(x) / Float(n - 1), v = Float(y) / Float(n - 1)
                var rgb: (Float, Float, Float) = (0.35 + 0.3 * v, 0.55 + 0.3 * v, 0.95 - 0.2 * v)  // sky
                let sun = hypot(u - 0.72, v - 0.25)
                if sun < 0.12 { rgb = (1.0, 0.85, 0.3) }
                if v > 0.62 + 0.08 * sin(u * 9) { rgb = (0.2 + 0.2 * u, 0.5 - 0.15 * v, 0.15) }  // hills
                if v > 0.85 { rgb = (0.45, 0.3, 0.15 + 0.1 * sin(u * 40)) }  // ground
                image[(0 * n + y) * n + x] = rgb.0
                image[(1 * n + y) * n + x] = rgb.1
                image[(2 * n + y) * n + x] = rgb.2
            }
        }
        return image
    }

    /// 1x6xHxW feature maps in about [-4, 4]: R, G, B, luminance, and the
    /// horizontal and vertical luminance gradients (edge detectors).
    static func features(of rgb: Tensor) throws -> Tensor {
        let n = size, plane = n * n
        let features = try Tensor(shape: [1, 6, n, n])
        func luminance(_ x: Int, _ y: Int) -> Float {
            let i = min(max(y, 0), n - 1) * n + min(max(x, 0), n - 1)
            return 0.299 * rgb[i] + 0.587 * rgb[plane + i] + 0.114 * rgb[2 * plane + i]
        }
        for y in 0..<n {
            for x in 0..<n {
                let i = y * n + x
                for c in 0..<3 { features[c * plane + i] = 8 * rgb[c * plane + i] - 4 }
                features[3 * plane + i] = 8 * luminance(x, y) - 4
                features[4 * plane + i] = 8 * (luminance(x + 1, y) - luminance(x - 1, y))
                features[5 * plane + i] = 8 * (luminance(x, y + 1) - luminance(x, y - 1))
            }
        }
        return features
    }
}
