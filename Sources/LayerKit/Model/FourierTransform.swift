import Foundation

/// The discrete Fourier transform of one complex sequence, in Double:
/// radix-2 Cooley-Tukey for a power-of-two length, Bluestein's chirp-z
/// (three power-of-two transforms) for any other, so every length costs
/// O(n log n). Unnormalized forward (e^-2πikn/N), the inverse scaled by
/// 1/N, as numpy.fft.fft and ifft.
struct FourierTransform {
    /// The sequence's length.
    let count: Int
    let inverse: Bool

    /// The transform of `real` and `imaginary` (each `count` long).
    func callAsFunction(_ real: [Double], _ imaginary: [Double]) -> (real: [Double], imaginary: [Double]) {
        var (re, im) = (real, imaginary)
        if count & (count - 1) == 0 {
            Self.radix2(&re, &im, inverse: inverse)
        } else {
            (re, im) = bluestein(re, im)
        }
        if inverse {
            let scale = 1 / Double(count)
            for k in 0..<count { re[k] *= scale; im[k] *= scale }
        }
        return (re, im)
    }

    /// In place, a power-of-two length, unnormalized.
    static func radix2(_ re: inout [Double], _ im: inout [Double], inverse: Bool) {
        let n = re.count
        guard n > 1 else { return }
        var j = 0
        for i in 1..<n {
            var bit = n >> 1
            while j & bit != 0 { j ^= bit; bit >>= 1 }
            j |= bit
            if i < j { re.swapAt(i, j); im.swapAt(i, j) }
        }
        let sign: Double = inverse ? 1 : -1
        var length = 2
        while length <= n {
            let angle = sign * 2 * Double.pi / Double(length), half = length / 2
            for start in stride(from: 0, to: n, by: length) {
                for k in 0..<half {
                    let (wr, wi) = (cos(angle * Double(k)), sin(angle * Double(k)))
                    let (a, b) = (start + k, start + k + half)
                    let tr = re[b] * wr - im[b] * wi, ti = re[b] * wi + im[b] * wr
                    (re[b], im[b]) = (re[a] - tr, im[a] - ti)
                    (re[a], im[a]) = (re[a] + tr, im[a] + ti)
                }
            }
            length <<= 1
        }
    }

    /// Any length as a convolution with a chirp, computed by power-of-two
    /// transforms of at least 2 * count - 1 points; unnormalized.
    private func bluestein(_ re: [Double], _ im: [Double]) -> ([Double], [Double]) {
        let n = count, sign: Double = inverse ? 1 : -1
        var m = 1
        while m < 2 * n - 1 { m <<= 1 }
        // The chirp w[k] = e^(sign * iπk²/n); k² taken mod 2n keeps the angle exact.
        let chirp = (0..<n).map { k -> (Double, Double) in
            let angle = sign * Double.pi * Double((k * k) % (2 * n)) / Double(n)
            return (cos(angle), sin(angle))
        }
        var (ar, ai) = ([Double](repeating: 0, count: m), [Double](repeating: 0, count: m))
        var (br, bi) = ([Double](repeating: 0, count: m), [Double](repeating: 0, count: m))
        for k in 0..<n {
            (ar[k], ai[k]) = (re[k] * chirp[k].0 - im[k] * chirp[k].1, re[k] * chirp[k].1 + im[k] * chirp[k].0)
            (br[k], bi[k]) = (chirp[k].0, -chirp[k].1)
            if k > 0 { (br[m - k], bi[m - k]) = (chirp[k].0, -chirp[k].1) }
        }
        Self.radix2(&ar, &ai, inverse: false)
        Self.radix2(&br, &bi, inverse: false)
        for k in 0..<m { (ar[k], ai[k]) = (ar[k] * br[k] - ai[k] * bi[k], ar[k] * bi[k] + ai[k] * br[k]) }
        Self.radix2(&ar, &ai, inverse: true)
        let scale = 1 / Double(m)
        var (outR, outI) = ([Double](repeating: 0, count: n), [Double](repeating: 0, count: n))
        for k in 0..<n {
            let (cr, ci) = (ar[k] * scale, ai[k] * scale)
            (outR[k], outI[k]) = (cr * chirp[k].0 - ci * chirp[k].1, cr * chirp[k].1 + ci * chirp[k].0)
        }
        return (outR, outI)
    }
}
