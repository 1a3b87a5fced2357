import Foundation
import LayerKit

/// The demo's built-in input, drawn in code so the binary needs no files: a
/// small landscape (sky gradient, sun, hills).
enum DemoImage {
    /// 1x3x`size`x`size` RGB in [0, 1].
    static func landscape(size: Int) throws -> Tensor {
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
}
