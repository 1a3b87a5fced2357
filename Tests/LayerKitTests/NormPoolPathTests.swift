import CKernels
import Foundation
import Testing

/// lk_norm.c's and lk_pool.c's portable and AVX2 paths, each forced, against
/// float64 references written here (the paths are picked by the CPU, so the
/// fixtures alone run only one of them).
struct NormPoolPathTests {
    private var paths: [lk_isa] {
        lk_kernels_isa() == LK_ISA_SCALAR ? [LK_ISA_SCALAR] : [LK_ISA_SCALAR, LK_ISA_AVX2_FMA]
    }

    private func values(_ count: Int, seed: UInt64, offset: Float) -> [Float] {
        var state = seed &* 6364136223846793005 &+ 1442695040888963407
        return (0..<count).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Double(state >> 40) / Double(1 << 24) * 6 - 3) + offset
        }
    }

    // Sizes around the 16 partial sums (remainders 0...15), one large plane.
    @Test(arguments: [1, 2, 15, 16, 17, 31, 33, 323, 4096 + 7])
    func meanVarianceAndNormalizeMatchDouble(count: Int) {
        let x = values(count, seed: UInt64(count), offset: 250)
        let mean = x.reduce(0.0) { $0 + Double($1) } / Double(count)
        let variance = x.reduce(0.0) { $0 + (Double($1) - mean) * (Double($1) - mean) } / Double(count)
        for isa in paths {
            var m = 0.0, v = 0.0
            lk_mean_variance_f32_isa(isa, x, count, &m, &v)
            #expect(abs(m - mean) <= 1e-12 * abs(mean), "isa \(isa.rawValue): mean \(m), reference \(mean)")
            #expect(abs(v - variance) <= 1e-9 * max(variance, 1e-30), "isa \(isa.rawValue): variance \(v), reference \(variance)")
            var y = [Float](repeating: 7, count: count + 3)
            let (a, b) = (1.7 / (variance + 1e-5).squareRoot(), -0.3)
            let meanSquare = x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(count)
            #expect(abs(lk_mean_square_f32_isa(isa, x, count) - meanSquare) <= 1e-12 * meanSquare,
                    "isa \(isa.rawValue): mean square")
            lk_normalize_f32_isa(isa, x, &y, count, mean, a, b)
            let reference = x.map { Float((Double($0) - mean) * a + b) }
            #expect(Array(y[..<count]) == reference, "isa \(isa.rawValue)")
            #expect(y[count...].allSatisfy { $0 == 7 }, "isa \(isa.rawValue) wrote past the end")
        }
    }

    /// LayerNormalization's row: a scale and a bias per element, or no bias.
    @Test(arguments: [1, 15, 16, 17, 512 + 3])
    func affineNormalizeMatchesDouble(count: Int) {
        let x = values(count, seed: UInt64(count) + 99, offset: -40)
        let scale = values(count, seed: 5, offset: 0), bias = values(count, seed: 6, offset: 1)
        let (mean, a) = (-39.5, 0.61)
        for isa in paths {
            for withBias in [true, false] {
                var y = [Float](repeating: 7, count: count + 3)
                if withBias {
                    lk_normalize_affine_f32_isa(isa, x, &y, count, mean, a, scale, bias)
                } else {
                    lk_normalize_affine_f32_isa(isa, x, &y, count, mean, a, scale, nil)
                }
                let reference = (0..<count).map {
                    Float((Double(x[$0]) - mean) * a * Double(scale[$0]) + (withBias ? Double(bias[$0]) : 0))
                }
                #expect(Array(y[..<count]) == reference, "isa \(isa.rawValue), bias \(withBias)")
                #expect(y[count...].allSatisfy { $0 == 7 }, "isa \(isa.rawValue) wrote past the end")
            }
        }
    }

    /// MaxPool 3x3 stride 2 (the one-pass folds) and 3x2 stride 1 (the
    /// general folds), with ceil-mode overhang, pads and NaN cells.
    @Test(arguments: [(13, 15, 3, 3, 2, 0, 1), (11, 9, 3, 3, 2, 1, 0), (12, 12, 3, 3, 2, 0, 1), (9, 10, 3, 2, 1, 1, 0)])
    func maxPoolPathsMatchTheWindowMaximum(_ c: (Int, Int, Int, Int, Int, Int, Int)) {
        let (h, w, kh, kw, stride, pad, ceil) = c
        let planes = 3
        var x = values(planes * h * w, seed: UInt64(h * w), offset: 0)
        x[5] = .nan
        x[h * w + 2 * w + 7] = .nan
        func outExtent(_ n: Int, _ k: Int) -> Int {
            let span = n + 2 * pad - k
            return (ceil == 1 ? (span + stride - 1) / stride : span / stride) + 1
        }
        let (oh, ow) = (outExtent(h, kh), outExtent(w, kw))
        // The ceil overhang is padding at the end (as Pooling.swift passes it).
        let (padBottom, padRight) = ((oh - 1) * stride + kh - h - pad, (ow - 1) * stride + kw - w - pad)
        var p = lk_pool2d_params(in_h: h, in_w: w, out_h: oh, out_w: ow, kernel_h: kh, kernel_w: kw,
                                 stride_h: stride, stride_w: stride, dilation_h: 1, dilation_w: 1,
                                 pad_top: pad, pad_left: pad, pad_bottom: padBottom, pad_right: padRight, kind: LK_POOL_MAX)
        var reference: [Float] = []
        for plane in 0..<planes {
            for oy in 0..<oh {
                for ox in 0..<ow {
                    var m = -Double.infinity, nan = false
                    for ky in 0..<kh {
                        for kx in 0..<kw {
                            let (iy, ix) = (oy * stride - pad + ky, ox * stride - pad + kx)
                            guard iy >= 0, iy < h, ix >= 0, ix < w else { continue }
                            let v = Double(x[(plane * h + iy) * w + ix])
                            if v.isNaN { nan = true } else { m = max(m, v) }
                        }
                    }
                    reference.append(nan ? .nan : Float(m))
                }
            }
        }
        for isa in paths {
            var y = [Float](repeating: 0, count: planes * oh * ow)
            var scratch = [Float](repeating: 0, count: lk_pool2d_scratch_floats(&p))
            lk_pool2d_f32_isa(isa, &p, x, &y, planes, &scratch)
            let bad = (0..<y.count).filter { !(y[$0] == reference[$0] || (y[$0].isNaN && reference[$0].isNaN)) }
            #expect(bad.isEmpty, "isa \(isa.rawValue): \(bad.prefix(5).map { (y[$0], reference[$0]) })")
        }
    }
}
