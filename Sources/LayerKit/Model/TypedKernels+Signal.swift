import Foundation
import LayerKitONNX

/// The Fourier transforms of the signal ops: DFT (along one axis of a real
/// [..., 1] or complex [..., 2] input) and STFT (framed, windowed DFTs),
/// computed in Double (`FourierTransform`) and rounded to the input's type,
/// as ONNX's reference defines them.
extension TypedKernels {
    /// The longest transform LayerKit computes (4M points): past it, one
    /// line's working arrays alone would take gigabytes.
    static let maxTransformLength = 1 << 22

    /// DFT-17 (`axis` an attribute, default 1) and 20 (`axis` an input,
    /// default -2): the transform of `dft_length` points (the input cut or
    /// zero-padded to it; default its extent) along `axis`, forward or
    /// `inverse` (scaled by 1/n). `onesided` keeps the first n/2 + 1
    /// frequencies of a forward transform; with `inverse`, it takes those
    /// (n = 2 * (extent - 1) by default) and gives the real signal ([..., 1]),
    /// as numpy.fft.irfft.
    static func dft(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(node.opset >= 20 ? ["inverse", "onesided"] : ["axis", "inverse", "onesided"])
        let x = try input(0, inputs, node)
        let rank = x.shape.count
        guard x.elementType.isFloatingPoint, rank >= 2, x.shape[rank - 1] == 1 || x.shape[rank - 1] == 2 else {
            throw node.error("input must be a float tensor [..., 1] (real) or [..., 2] (complex), got \(x)")
        }
        var axis = try node.int("axis", default: 1)
        if node.opset >= 20 { axis = try optional(2, inputs).map { Int(try scalarInteger($0, "axis", node)) } ?? -2 }
        guard (-rank..<(rank - 1)).contains(axis), axis != -1 else {
            throw node.error("axis \(axis) must name a signal axis of the rank-\(rank) input, not its last (complex) one")
        }
        axis = axis < 0 ? axis + rank : axis
        let inverse = try node.int("inverse", default: 0) != 0, onesided = try node.int("onesided", default: 0) != 0
        let extent = x.shape[axis]
        let length = try optional(1, inputs).map { try transformLength(scalarInteger($0, "dft_length", node), node) }
            ?? transformLength(Int64(inverse && onesided ? 2 * (extent - 1) : extent), node)
        let lines = try SignalLines(x, axis: axis)
        let real = inverse && onesided
        let bins = real ? length : onesided ? length / 2 + 1 : length
        var shape = x.shape
        (shape[axis], shape[rank - 1]) = (bins, real ? 1 : 2)
        let transform = FourierTransform(count: length, inverse: inverse)
        var out = [Double](repeating: 0, count: try ONNXFolding.checkedCount(shape, node))
        for line in 0..<lines.count {
            var (re, im) = lines.read(line, count: real ? length / 2 + 1 : length)
            if real { (re, im) = hermitian(re, im, length: length) }
            let (fr, fi) = transform(re, im)
            let base = lines.outer(line) * bins * (real ? 1 : 2) * lines.inner + lines.innerIndex(line) * (real ? 1 : 2)
            for k in 0..<bins {
                let at = base + k * lines.inner * (real ? 1 : 2)
                out[at] = fr[k]
                if !real { out[at + 1] = fi[k] }
            }
        }
        return [try TypedTensor(x.elementType, shape: shape, doubles: out)]
    }

    /// STFT-17: signal [batch, length, 1 or 2] cut into frames of
    /// `frame_length` (default the window's length) every `frame_step`,
    /// each multiplied by `window` (default ones) and transformed:
    /// [batch, frames, bins, 2], bins n/2 + 1 when `onesided` (default).
    static func stft(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["onesided"])
        let signal = try input(0, inputs, node), step = try scalarInteger(input(1, inputs, node), "frame_step", node)
        guard signal.elementType.isFloatingPoint, signal.shape.count == 3, [1, 2].contains(signal.shape[2]) else {
            throw node.error("signal must be a float tensor [batch, length, 1 or 2], got \(signal)")
        }
        let window = optional(2, inputs).map { $0.doubles() }
        if let given = optional(2, inputs), given.shape.count != 1 { throw node.error("window must be 1-D, got \(given)") }
        let frameLength = try optional(3, inputs).map { try transformLength(scalarInteger($0, "frame_length", node), node) }
        guard let length = frameLength ?? window.map(\.count) else {
            throw node.error("needs a window or a frame_length to know the frames' length")
        }
        let n = try transformLength(Int64(length), node)
        if let window, window.count != n {
            throw node.error("the window's \(window.count) values must match frame_length \(n)")
        }
        let (batch, samples, parts) = (signal.shape[0], signal.shape[1], signal.shape[2])
        guard step >= 1, samples >= n else {
            throw node.error("frame_step \(step) must be >= 1 and the signal's \(samples) samples at least one frame of \(n)")
        }
        let frames = 1 + (samples - n) / Int(min(step, Int64(samples)))
        let onesided = try node.int("onesided", default: 1) != 0
        let bins = onesided ? n / 2 + 1 : n
        let shape = [batch, frames, bins, 2]
        var out = [Double](repeating: 0, count: try ONNXFolding.checkedCount(shape, node))
        let values = signal.doubles(), transform = FourierTransform(count: n, inverse: false)
        for b in 0..<batch {
            for f in 0..<frames {
                var (re, im) = ([Double](repeating: 0, count: n), [Double](repeating: 0, count: n))
                for t in 0..<n {
                    let at = (b * samples + f * Int(step) + t) * parts, weight = window?[t] ?? 1
                    re[t] = values[at] * weight
                    if parts == 2 { im[t] = values[at + 1] * weight }
                }
                let (fr, fi) = transform(re, im)
                for k in 0..<bins { (out[((b * frames + f) * bins + k) * 2], out[((b * frames + f) * bins + k) * 2 + 1]) = (fr[k], fi[k]) }
            }
        }
        return [try TypedTensor(signal.elementType, shape: shape, doubles: out)]
    }

    /// A transform's length, checked: 1 to `maxTransformLength`.
    private static func transformLength(_ value: Int64, _ node: ONNXNodeContext) throws -> Int {
        guard value >= 1, value <= Int64(maxTransformLength) else {
            throw node.error("a transform of \(value) points is outside 1...\(maxTransformLength), LayerKit's limit")
        }
        return Int(value)
    }

    /// The full spectrum of a real signal of `length` from its first
    /// length/2 + 1 frequencies: the rest their conjugates, the imaginary
    /// parts of the zero (and even length's middle) frequency dropped, as
    /// numpy.fft.irfft reads them.
    private static func hermitian(_ re: [Double], _ im: [Double], length: Int) -> ([Double], [Double]) {
        var (fullR, fullI) = ([Double](repeating: 0, count: length), [Double](repeating: 0, count: length))
        for k in 0..<min(re.count, length) {
            (fullR[k], fullI[k]) = (re[k], im[k])
            if k > 0 { (fullR[length - k], fullI[length - k]) = (re[k], -im[k]) }
        }
        fullI[0] = 0
        if length % 2 == 0 { fullI[length / 2] = 0 }
        return (fullR, fullI)
    }
}

/// The lines of a DFT input along its axis: each a complex sequence of
/// the axis's extent, one per (outer, inner) position, the last axis the
/// real part and, when it is 2, the imaginary one.
private struct SignalLines {
    let values: [Double]
    let extent: Int
    /// The elements before the axis, and between it and the last axis.
    let outerCount: Int
    let inner: Int
    let parts: Int

    init(_ x: TypedTensor, axis: Int) throws {
        values = x.doubles()
        extent = x.shape[axis]
        outerCount = x.shape[..<axis].reduce(1, *)
        inner = x.shape[(axis + 1)..<(x.shape.count - 1)].reduce(1, *)
        parts = x.shape[x.shape.count - 1]
    }

    var count: Int { outerCount * inner }
    func outer(_ line: Int) -> Int { line / inner }
    func innerIndex(_ line: Int) -> Int { line % inner }

    /// Line `line`'s first `count` values, zeros past the extent.
    func read(_ line: Int, count: Int) -> ([Double], [Double]) {
        var (re, im) = ([Double](repeating: 0, count: count), [Double](repeating: 0, count: count))
        for t in 0..<min(count, extent) {
            let at = ((outer(line) * extent + t) * inner + innerIndex(line)) * parts
            re[t] = values[at]
            if parts == 2 { im[t] = values[at + 1] }
        }
        return (re, im)
    }
}
