import CKernels
import Testing
@testable import LayerKit

/// B^T, G, A^T of F(m x m, 3x3) at lk_winograd.h's points (F(2x2): 0, 1, -1;
/// F(4x4): 0, 1, -1, 1/2, -2; both with infinity), in Double: the error
/// bound below is computed from their magnitudes.
struct WinogradMatrices: Sendable {
    let m: Int
    let bt: [[Double]], g: [[Double]], at: [[Double]]
    var n: Int { m + 2 }

    static let f2 = WinogradMatrices(
        m: 2, bt: [[-1, 0, 1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, -1, 0, 1]],
        g: [[-1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], at: [[1, 1, 1, 0], [0, 1, -1, 1]])
    static let f4 = WinogradMatrices(
        m: 4,
        bt: [[1, -1.5, -2, 1.5, 1, 0], [0, -2, 1, 5, 2, 0], [0, 2, -5, 1, 2, 0], [0, -2, -1, 2, 1, 0],
             [0, 1, -2, -1, 2, 0], [0, 1, -1.5, -2, 1.5, 1]],
        g: [[1, 0, 0], [1.0 / 6, 1.0 / 6, 1.0 / 6], [-1.0 / 6, 1.0 / 6, -1.0 / 6],
            [-16.0 / 15, -8.0 / 15, -4.0 / 15], [1.0 / 30, -1.0 / 15, 2.0 / 15], [0, 0, 1]],
        at: [[1, 1, 1, 1, 1, 0], [0, 1, -1, 0.5, -2, 0], [0, 1, 1, 0.25, 4, 0], [0, 1, -1, 0.125, -8, 1]])
}

/// γ_k = k u / (1 - k u), u = 2^-24: the relative error bound of k float
/// roundings in sequence (Higham, Accuracy and Stability, 3.1).
private func gamma(_ k: Int) -> Double {
    let u = 0x1p-24
    return Double(k) * u / (1 - Double(k) * u)
}

/// One 3x3 stride-1 convolution to run by Winograd.
struct WinogradCase: CustomTestStringConvertible, Sendable {
    var batch = 2
    var channels: Int
    var outputChannels: Int
    var height: Int
    var width: Int
    var pads: [Int]  // top, left, bottom, right
    var bias = true

    var testDescription: String {
        "\(batch)x\(channels)x\(height)x\(width) -> \(outputChannels) pads \(pads)\(bias ? "" : " no bias")"
    }
    var outHeight: Int { height + pads[0] + pads[2] - 2 }
    var outWidth: Int { width + pads[1] + pads[3] - 2 }

    func layer() throws -> Convolution {
        try Convolution(weights: seededTensor([outputChannels, channels, 3, 3], seed: 21),
                        bias: bias ? seededTensor([outputChannels], seed: 22) : nil, padding: .explicit(pads))
    }

    /// Per output, in float64: the exact value, the sum of |w||x| terms
    /// (plus |bias|), and the magnitude the Winograd error is bounded by,
    /// |A^T| (sum_c |G||g_c||G^T| . |B^T||d_c||B|) |A| + |bias| for the
    /// output's m x m tile (tiles from output (0, 0), input patch d_c
    /// zero outside the input).
    func reference(x: Tensor, layer: Convolution, matrices t: WinogradMatrices)
        -> (values: [Double], absSum: [Double], bound: [Double]) {
        let (n, c, h, w, m, oh, ow) = (batch, channels, height, width, outputChannels, outHeight, outWidth)
        let (pt, pl, tm, tn) = (pads[0], pads[1], t.m, t.n)
        let wv = layer.weights.values, xv = x.values, bv = layer.bias?.values
        var values = [Double](repeating: 0, count: n * m * oh * ow), absSum = values, bound = values
        // |G||g||G^T| per (output, input) channel pair.
        var uAbs = [Double](repeating: 0, count: m * c * tn * tn)
        for o in 0..<m {
            for i in 0..<c {
                for a in 0..<tn {
                    for b in 0..<tn {
                        var s = 0.0
                        for k in 0..<3 {
                            for l in 0..<3 {
                                s += abs(t.g[a][k]) * abs(Double(wv[((o * c + i) * 3 + k) * 3 + l])) * abs(t.g[b][l])
                            }
                        }
                        uAbs[((o * c + i) * tn + a) * tn + b] = s
                    }
                }
            }
        }
        for img in 0..<n {
            for o in 0..<m {
                for oy in 0..<oh {
                    for ox in 0..<ow {
                        var sum = bv.map { Double($0[o]) } ?? 0, mag = abs(sum)
                        for i in 0..<c {
                            for ky in 0..<3 {
                                let iy = oy + ky - pt
                                guard iy >= 0, iy < h else { continue }
                                for kx in 0..<3 {
                                    let ix = ox + kx - pl
                                    guard ix >= 0, ix < w else { continue }
                                    let p = Double(wv[((o * c + i) * 3 + ky) * 3 + kx]) * Double(xv[((img * c + i) * h + iy) * w + ix])
                                    sum += p
                                    mag += abs(p)
                                }
                            }
                        }
                        values[((img * m + o) * oh + oy) * ow + ox] = sum
                        absSum[((img * m + o) * oh + oy) * ow + ox] = mag
                    }
                }
            }
            // The Winograd magnitude, tile by tile.
            for ty in 0..<(oh + tm - 1) / tm {
                for tx in 0..<(ow + tm - 1) / tm {
                    var vAbs = [Double](repeating: 0, count: c * tn * tn)
                    for i in 0..<c {
                        var d = [Double](repeating: 0, count: tn * tn)
                        for p in 0..<tn {
                            let iy = ty * tm + p - pt
                            guard iy >= 0, iy < h else { continue }
                            for q in 0..<tn {
                                let ix = tx * tm + q - pl
                                guard ix >= 0, ix < w else { continue }
                                d[p * tn + q] = abs(Double(xv[((img * c + i) * h + iy) * w + ix]))
                            }
                        }
                        for a in 0..<tn {
                            for b in 0..<tn {
                                var s = 0.0
                                for p in 0..<tn where t.bt[a][p] != 0 {
                                    for q in 0..<tn where t.bt[b][q] != 0 {
                                        s += abs(t.bt[a][p]) * d[p * tn + q] * abs(t.bt[b][q])
                                    }
                                }
                                vAbs[(i * tn + a) * tn + b] = s
                            }
                        }
                    }
                    for o in 0..<m {
                        var acc = [Double](repeating: 0, count: tn * tn)
                        for i in 0..<c {
                            for ab in 0..<tn * tn { acc[ab] += uAbs[(o * c + i) * tn * tn + ab] * vAbs[i * tn * tn + ab] }
                        }
                        for i in 0..<tm where ty * tm + i < oh {
                            for j in 0..<tm where tx * tm + j < ow {
                                var s = bv.map { abs(Double($0[o])) } ?? 0
                                for a in 0..<tn {
                                    for b in 0..<tn { s += abs(t.at[i][a]) * acc[a * tn + b] * abs(t.at[j][b]) }
                                }
                                bound[((img * m + o) * oh + ty * tm + i) * ow + tx * tm + j] = s
                            }
                        }
                    }
                }
            }
        }
        return (values, absSum, bound)
    }
}

/// The layer's output with the algorithm and instruction set forced.
private func run(_ layer: Convolution, _ x: Tensor, algorithm: Convolution.CPUAlgorithm, isa: lk_isa? = nil,
                 threads: Int = 1) throws -> Tensor {
    let shape = try layer.outputShapes(forInputShapes: [x.shape])[0]
    let y = try Tensor(shape: shape)
    layer.threadCount = threads
    try Convolution.$forcedCPUAlgorithm.withValue(algorithm) {
        try Convolution.$forcedWinogradISA.withValue(isa) {
            try layer.evaluate(inputs: [x], outputs: [y])
        }
    }
    return y
}

/// The instruction sets this CPU runs.
private let isas = [LK_ISA_SCALAR, LK_ISA_AVX2_FMA, LK_ISA_AVX512F].filter { $0.rawValue <= lk_kernels_isa().rawValue }

struct WinogradTests {
    /// Every pair of C, M in {1, 3, 17, 64}, with sizes 1..56, pads 0, 1 and
    /// asymmetric ones, batch 2, with and without bias.
    static let cases: [WinogradCase] = {
        let counts = [1, 3, 17, 64]
        let sizes = [(1, 1), (2, 2), (5, 7), (7, 5), (13, 13), (2, 13), (13, 1), (56, 56), (7, 7), (5, 2)]
        let padSets = [[0, 0, 0, 0], [1, 1, 1, 1], [1, 0, 2, 1], [0, 2, 1, 0]]
        var cases: [WinogradCase] = []
        for i in 0..<16 {
            let (h, w) = sizes[i % sizes.count]
            var pads = padSets[i % padSets.count]
            if h + pads[0] + pads[2] < 3 { (pads[0], pads[2]) = (1, 1) }
            if w + pads[1] + pads[3] < 3 { (pads[1], pads[3]) = (1, 1) }
            // The 56x56 map with few channels only: the float64 reference runs unoptimized.
            let (c, m) = (h == 56 ? 3 : counts[i % 4], h == 56 ? 17 : counts[i / 4])
            cases.append(WinogradCase(channels: c, outputChannels: m, height: h, width: w, pads: pads, bias: i % 3 != 0))
        }
        cases.append(WinogradCase(batch: 1, channels: 64, outputChannels: 64, height: 56, width: 56, pads: [1, 1, 1, 1]))
        cases.append(WinogradCase(channels: 64, outputChannels: 17, height: 13, width: 7, pads: [2, 0, 0, 2]))
        return cases
    }()

    /// Every case on every instruction set, F(2x2) and F(4x4), on 1 and 2
    /// threads (which must agree bit for bit: threads split whole tile rows,
    /// and no tile's arithmetic depends on its block).
    ///
    /// The bound: each output of F(m x m) is A^T [sum_c U_c . V_c] A with
    /// U_c = G g_c G^T rounded once from double, V_c = B^T d_c B computed in
    /// two float passes of n = m + 2 terms, the sum over C channels, and the
    /// output transform's two passes and the bias: at most C + 4n + 3
    /// roundings in sequence, so (to first order in u = 2^-24)
    /// |y - exact| <= γ(C + 4n + 3) * |A^T| (sum_c |G||g_c||G^T| . |B^T||d_c||B|) |A|,
    /// asserted for every output. That magnitude exceeds the direct sum of
    /// |w||x| by the transforms' coefficients (F(4x4)'s reach 8 and 5); on
    /// these uniform [-1, 1] values the error also stays within 1e-5 of the
    /// sum of |w||x| terms, asserted too (measured at most 2.4e-6 with F(4x4),
    /// on 3 input channels, and 2.9e-7 with F(2x2); printed per case). The
    /// error stays at most 2.8% of the bound.
    @Test(arguments: cases)
    func matchesFloat64Reference(_ c: WinogradCase) throws {
        let layer = try c.layer()
        let x = try seededTensor([c.batch, c.channels, c.height, c.width], seed: 23)
        for (algorithm, matrices) in [(Convolution.CPUAlgorithm.winograd2, WinogradMatrices.f2), (.winograd4, .f4)] {
            let ref = c.reference(x: x, layer: layer, matrices: matrices)
            let k = c.channels + 4 * matrices.n + 3
            for isa in isas {
                let y = try run(layer, x, algorithm: algorithm, isa: isa)
                let name = "\(c.testDescription) F(\(matrices.m)x\(matrices.m)) \(String(cString: lk_isa_name(isa)))"
                var (worstBound, worstSum, maxRatioSum, maxRatioBound) = (-1, -1, 0.0, 0.0)
                // Read once: `Tensor.values` copies the tensor, so reading it per element is quadratic.
                let values = y.values
                for i in 0..<y.count {
                    let error = abs(Double(values[i]) - ref.values[i])
                    let ratioSum = error / max(ref.absSum[i], .leastNormalMagnitude)
                    let ratioBound = error / max(gamma(k) * ref.bound[i], .leastNormalMagnitude)
                    if !(error <= gamma(k) * ref.bound[i]), worstBound < 0 { worstBound = i }
                    if !(error <= 1e-5 * ref.absSum[i]), worstSum < 0 { worstSum = i }
                    maxRatioSum = max(maxRatioSum, ratioSum)
                    maxRatioBound = max(maxRatioBound, ratioBound)
                }
                #expect(worstBound < 0, "\(name): element \(worstBound) \(worstBound < 0 ? 0 : values[worstBound]), expected \(worstBound < 0 ? 0 : ref.values[worstBound]): past γ(\(k)) times the Winograd magnitude")
                #expect(worstSum < 0, "\(name): element \(worstSum) past 1e-5 of the sum of |w||x| terms")
                print("winograd-error \(name): max |y - ref| / sum|w||x| = \(maxRatioSum), / bound = \(maxRatioBound)")
                if isa == isas.last {
                    let two = try run(layer, x, algorithm: algorithm, isa: isa, threads: 2)
                    #expect(two.values == y.values, "\(name): 2 threads differ from 1")
                }
            }
        }
    }

    /// Forced Winograd against the direct path on an odd case: within the
    /// Winograd bound plus the direct sum's own (γ(9C + 1) of the |w||x| sum).
    @Test func winogradMatchesDirectPath() throws {
        let c = WinogradCase(channels: 19, outputChannels: 23, height: 11, width: 9, pads: [1, 0, 2, 1])
        let layer = try c.layer()
        let x = try seededTensor([c.batch, c.channels, c.height, c.width], seed: 24)
        let direct = try run(layer, x, algorithm: .direct)
        for (algorithm, matrices) in [(Convolution.CPUAlgorithm.winograd2, WinogradMatrices.f2), (.winograd4, .f4)] {
            let ref = c.reference(x: x, layer: layer, matrices: matrices)
            let y = try run(layer, x, algorithm: algorithm).values, expected = direct.values
            let k = c.channels + 4 * matrices.n + 3
            for i in 0..<y.count {
                let allowed = gamma(k) * ref.bound[i] + gamma(9 * c.channels + 1) * ref.absSum[i]
                guard abs(Double(y[i]) - Double(expected[i])) <= allowed else {
                    Issue.record("F(\(matrices.m)x\(matrices.m)) element \(i): \(y[i]) against direct \(expected[i])")
                    break
                }
            }
            #expect(y != expected, "the forced path must be another computation")
        }
    }

    /// The automatic path is the forced one it selects, bit for bit (so the
    /// bounds above hold for it): 32 channels on 32x32 select F(4x4).
    @Test func automaticPathIsTheSelectedOne() throws {
        let c = WinogradCase(batch: 1, channels: 32, outputChannels: 32, height: 32, width: 32, pads: [1, 1, 1, 1])
        let layer = try c.layer()
        let x = try seededTensor([1, 32, 32, 32], seed: 25)
        #expect(layer.cpuAlgorithm(for: try layer.geometry(forInputShape: x.shape)) == .winograd4)
        for threads in [1, 2] {
            let automatic = try run(layer, x, algorithm: .automatic, threads: threads)
            #expect(automatic.values == (try run(layer, x, algorithm: .winograd4)).values, "\(threads) threads")
        }
    }

    /// Inf and NaN keep the direct sum's IEEE results: a transform would
    /// mix a tile's cells (inf - inf = NaN over the whole tile), so a block
    /// holding one runs the direct path, and so does a layer with an inf or
    /// NaN weight.
    @Test func specialValuesGiveTheDirectResults() throws {
        let c = WinogradCase(batch: 2, channels: 32, outputChannels: 33, height: 24, width: 20, pads: [1, 1, 1, 1])
        let layer = try c.layer()
        let x = try seededTensor([2, 32, 24, 20], seed: 26)
        x.dataPointer[5 * 20 + 7] = .infinity            // image 0, channel 0
        x.dataPointer[(32 + 3) * 480 + 20 * 20 + 1] = .nan  // image 1, channel 3
        func same(_ a: Tensor, _ b: Tensor, _ what: String) {
            func differs(_ p: Float, _ q: Float) -> Bool {
                if p.isNaN || q.isNaN { return p.isNaN != q.isNaN }
                if p.isInfinite || q.isInfinite { return p != q }
                return abs(p - q) > 1e-3 * max(1, abs(q))
            }
            let (av, bv) = (a.values, b.values)
            let differ = av.indices.first { differs(av[$0], bv[$0]) }
            #expect(differ == nil, "\(what): element \(differ ?? 0) is \(differ.map { av[$0] } ?? 0), direct \(differ.map { bv[$0] } ?? 0)")
        }
        let direct = try run(layer, x, algorithm: .direct)
        #expect(direct.values.contains { $0.isInfinite } && direct.values.contains { $0.isNaN })
        for algorithm in [Convolution.CPUAlgorithm.winograd2, .winograd4] {
            for threads in [1, 2] { same(try run(layer, x, algorithm: algorithm, threads: threads), direct, "\(algorithm) \(threads) threads") }
        }
        let w = try seededTensor([33, 32, 3, 3], seed: 27)
        w.dataPointer[100] = -.infinity
        let infinite = try Convolution(weights: w, padding: .explicit([1, 1, 1, 1]))
        let finiteX = try seededTensor([2, 32, 24, 20], seed: 28)
        same(try run(infinite, finiteX, algorithm: .winograd4), try run(infinite, finiteX, algorithm: .direct), "inf weight")
    }

    /// Automatic selection: F(4x4) for resnet's 64->64 on 56x56, F(2x2) on
    /// 14x14, the direct path on 7x7, for few channels and for other shapes.
    @Test func selection() throws {
        func algorithm(_ input: [Int], _ m: Int, strides: [Int] = [1, 1], kernel: Int = 3, group: Int = 1)
            throws -> Convolution.CPUAlgorithm {
            let layer = try Convolution(weights: Tensor(shape: [m, input[1] / group, kernel, kernel]), strides: strides,
                                        padding: .explicit([1, 1, 1, 1]), group: group)
            return layer.cpuAlgorithm(for: try layer.geometry(forInputShape: input))
        }
        #expect(try algorithm([1, 64, 56, 56], 64) == .winograd4)
        #expect(try algorithm([1, 256, 14, 14], 256) == .winograd2)
        #expect(try algorithm([1, 512, 7, 7], 512) == .direct)
        #expect(try algorithm([1, 3, 224, 224], 64) == .direct)
        #expect(try algorithm([1, 16, 56, 56], 16) == .direct)
        #expect(try algorithm([1, 64, 56, 56], 64, strides: [2, 2]) == .direct)
        #expect(try algorithm([1, 64, 56, 56], 64, group: 2) == .direct)
        #expect(try algorithm([1, 64, 56, 56], 64, kernel: 5) == .direct)
        // A forced Winograd stays off shapes the kernels do not take.
        let strided = try Convolution(weights: Tensor(shape: [8, 8, 3, 3]), strides: [2, 2])
        let g = try strided.geometry(forInputShape: [1, 8, 9, 9])
        #expect(Convolution.$forcedCPUAlgorithm.withValue(.winograd4) { strided.cpuAlgorithm(for: g) } == .direct)
    }
}
