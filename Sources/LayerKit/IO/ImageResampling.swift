import Foundation

/// How an image is resampled to a new size, as Pillow's `Image.resize`
/// resamples (`Image.Resampling.BILINEAR`, `NEAREST`, `BICUBIC`).
public enum ImageInterpolation: String, Sendable, CaseIterable {
    /// A triangle filter of support 1, widened by the scale factor when
    /// shrinking: an antialiased bilinear.
    case bilinear
    /// The source pixel under each output pixel's centre, no filtering.
    case nearest
    /// Keys' cubic (a = -0.5) of support 2, widened by the scale factor when
    /// shrinking; values outside 0...1 are clamped after each pass.
    case bicubic

    /// The filter's half width in source pixels at scale 1 (`.nearest`'s
    /// box is for completeness: `resamplingTaps` takes its one pixel directly,
    /// as Pillow's nearest resize does).
    var support: Double {
        switch self {
        case .nearest: 0.5
        case .bilinear: 1
        case .bicubic: 2
        }
    }

    /// The filter's weight at distance `x` (in source pixels at scale 1).
    func weight(_ x: Double) -> Double {
        let x = abs(x)
        switch self {
        case .nearest: return x < 0.5 ? 1 : 0
        case .bilinear: return x < 1 ? 1 - x : 0
        case .bicubic:
            let a = -0.5
            if x < 1 { return ((a + 2) * x - (a + 3)) * x * x + 1 }
            if x < 2 { return (((x - 5) * x + 8) * x - 4) * a }
            return 0
        }
    }
}

extension Tensor {
    /// The NCHW image resampled to `width`×`height` as Pillow's
    /// `Image.resize` does it: each output pixel's centre maps to
    /// `(x + 0.5) * in / out` in the source; `.nearest` takes the pixel
    /// there, `.bilinear` and `.bicubic` weigh the source pixels within
    /// the filter's support, the support (and the filter) stretched by the
    /// scale factor when shrinking so that every source pixel counts
    /// (antialiasing), the weights normalized where the image edge cuts the
    /// window. Rows are resampled first, then columns; `.bicubic` clamps
    /// to 0...1 after each pass, as Pillow's 8-bit images are.
    public func resampled(width: Int, height: Int, interpolation: ImageInterpolation) throws -> Tensor {
        let (n, c, h, w) = try nchw()
        guard width > 0, height > 0 else {
            throw LayerKitError.invalidParameter("resize to \(width)x\(height): sizes must be positive")
        }
        let horizontal = Self.resamplingTaps(from: w, to: width, interpolation)
        let vertical = Self.resamplingTaps(from: h, to: height, interpolation)
        let clamp = interpolation == .bicubic
        let rows = try Tensor(shape: [n, c, h, width])
        for plane in 0..<n * c {
            let source = dataPointer + plane * h * w, target = rows.dataPointer + plane * h * width
            for y in 0..<h {
                for (x, tap) in horizontal.enumerated() {
                    var sum: Float = 0
                    for (k, weight) in tap.weights.enumerated() { sum += source[y * w + tap.first + k] * weight }
                    target[y * width + x] = clamp ? min(max(sum, 0), 1) : sum
                }
            }
        }
        let output = try Tensor(shape: [n, c, height, width])
        for plane in 0..<n * c {
            let source = rows.dataPointer + plane * h * width, target = output.dataPointer + plane * height * width
            for (y, tap) in vertical.enumerated() {
                for x in 0..<width {
                    var sum: Float = 0
                    for (k, weight) in tap.weights.enumerated() { sum += source[(tap.first + k) * width + x] * weight }
                    target[y * width + x] = clamp ? min(max(sum, 0), 1) : sum
                }
            }
        }
        return output
    }

    /// For each of `outSize` output pixels: its first source pixel and the
    /// normalized weights of the source pixels from there (Pillow's
    /// `precompute_coeffs`; for `.nearest` the one pixel at
    /// `floor((o + 0.5) * scale)`, as Pillow's affine nearest transform).
    static func resamplingTaps(from inSize: Int, to outSize: Int,
                               _ interpolation: ImageInterpolation) -> [(first: Int, weights: [Float])] {
        let scale = Double(inSize) / Double(outSize)
        guard interpolation != .nearest else {
            return (0..<outSize).map { o in (min(Int((Double(o) + 0.5) * scale), inSize - 1), [1]) }
        }
        let filterScale = max(scale, 1)
        let support = interpolation.support * filterScale
        return (0..<outSize).map { o in
            let center = (Double(o) + 0.5) * scale
            let low = max(0, Int(center - support + 0.5))
            let high = min(inSize, Int(center + support + 0.5))
            let raw = (low..<max(high, low + 1)).map { interpolation.weight((Double($0) - center + 0.5) / filterScale) }
            let total = raw.reduce(0, +)
            return (low, raw.map { Float(total == 0 ? 0 : $0 / total) })
        }
    }
}
