import CKernels
import Foundation
import Testing
@testable import LayerKit

// Tests of the array primitives in lk_vector.h on every instruction set this
// CPU has. Expected values come from Double math (Foundation), never from
// the code under test.

/// The instruction sets this CPU can run, as raw values (scalar always).
private let isaValues: [UInt32] = Array(0...lk_kernels_isa().rawValue)

private func isaName(_ raw: UInt32) -> String { String(cString: lk_isa_name(lk_isa(rawValue: raw))) }

/// The accuracy bound of every inexact primitive: relative where the exact
/// result is a normal float, absolute below that.
private let relativeBound = 2e-7
private let subnormalFloor = 1e-37

/// The error of `y` against the exact `reference` in units of the bound:
/// <= 1 passes. NaN and infinite results must match exactly (0 or .infinity).
/// A result within the bound of Float.greatestFiniteMagnitude may also round
/// to inf.
private func errorRatio(_ y: Float, _ reference: Double) -> Double {
    if reference.isNaN { return y.isNaN ? 0 : .infinity }
    if y.isNaN { return .infinity }
    let rounded = Float(reference)
    if rounded.isInfinite { return y == rounded ? 0 : .infinity }
    if y.isInfinite {
        let nearMax = abs(reference) >= Double(Float.greatestFiniteMagnitude) * (1 - relativeBound)
        return nearMax && (y > 0) == (reference > 0) ? 0 : .infinity
    }
    let error = abs(Double(y) - reference)
    if abs(reference) >= Double(Float.leastNormalMagnitude) {
        return error / (relativeBound * abs(reference))
    }
    return error / subnormalFloor
}

/// Whether `y` is exactly `expected` (same bits, so signed zeros count; any NaN matches NaN).
private func identical(_ y: Float, _ expected: Float) -> Bool {
    expected.isNaN ? y.isNaN : y.bitPattern == expected.bitPattern
}

/// Stable float64 logistic function.
private func sigmoid(_ x: Double) -> Double {
    let e = exp(-abs(x))
    return x >= 0 ? 1 / (1 + e) : e / (1 + e)
}

/// Stable float64 softplus: max(x, 0) + log1p(exp(-|x|)).
private func softplus(_ x: Double) -> Double {
    x.isNaN ? x : max(x, 0) + log1p(exp(-abs(x)))
}

/// One unary primitive: its op, the dense range to sweep, its float64 reference,
/// and whether it must be exact (correctly rounded, bit for bit).
struct UnaryCase: Sendable, CustomTestStringConvertible {
    let name: String
    let op: UInt32
    let range: ClosedRange<Double>
    let exact: Bool
    let reference: @Sendable (Double) -> Double

    var testDescription: String { name }
}

private func unary(_ name: String, _ op: lk_unary_op, _ range: ClosedRange<Double>, exact: Bool = false,
                   _ reference: @escaping @Sendable (Double) -> Double) -> UnaryCase {
    UnaryCase(name: name, op: op.rawValue, range: range, exact: exact, reference: reference)
}

private let unaryCases: [UnaryCase] = [
    unary("exp", LK_EXP, -110...90) { exp($0) },
    unary("log", LK_LOG, 0...100) { log($0) },
    unary("log1p", LK_LOG1P, -1...10) { log1p($0) },
    unary("expm1", LK_EXPM1, -20...90) { expm1($0) },
    unary("sqrt", LK_SQRT, 0...1e4, exact: true) { sqrt($0) },
    unary("abs", LK_ABS, -100...100, exact: true) { abs($0) },
    unary("neg", LK_NEG, -100...100, exact: true) { -$0 },
    unary("reciprocal", LK_RECIPROCAL, -100...100, exact: true) { 1 / $0 },
    unary("tanh", LK_TANH, -10...10) { tanh($0) },
    unary("sigmoid", LK_SIGMOID, -110...110) { sigmoid($0) },
    unary("softplus", LK_SOFTPLUS, -110...110) { softplus($0) },
    unary("erf", LK_ERF, -5...5) { erf($0) },
    unary("sin", LK_SIN, -1e4...1e4) { sin($0) },
    unary("cos", LK_COS, -1e4...1e4) { cos($0) },
    unary("floor", LK_FLOOR, -100...100, exact: true) { floor($0) },
    unary("ceil", LK_CEIL, -100...100, exact: true) { ceil($0) },
    unary("round", LK_ROUND, -100...100, exact: true) { $0.rounded(.toNearestOrEven) },
    unary("isnan", LK_ISNAN, -100...100, exact: true) { $0.isNaN ? 1 : 0 },
    unary("isinf", LK_ISINF, -100...100, exact: true) { $0.isInfinite ? 1 : 0 },
]

/// Values every op sees: signed zeros, tiny and subnormal values, the
/// exp overflow and underflow edges, large values, infinities and NaN.
private let unaryEdgeValues: [Float] = edgeCaseFloats + [
    1, -1, 0.5, -0.5, 1e-7, -1e-7, 1e-20, -1e-20, 88.7, -88.7, 88.72283, 88.72284, -87.33655,
    -103.97, -104, 89, -89, 20, -20, 1e4 + 0.5, 3.1415927, -3.1415927, 1.5707964, 2.5, -2.5,
    .leastNormalMagnitude, -.leastNormalMagnitude, .ulpOfOne, -.ulpOfOne,
]

/// 200_001 points evenly over `range`, 20_000 log-spaced magnitudes from
/// 1e-45 to 3e38 of both signs, and the edge values.
private func sweep(_ range: ClosedRange<Double>) -> [Float] {
    let dense = 200_001
    var values = (0..<dense).map { i in
        Float(range.lowerBound + (range.upperBound - range.lowerBound) * Double(i) / Double(dense - 1))
    }
    for i in 0..<20_000 {
        let magnitude = Float(pow(10, -45 + 83.5 * Double(i) / 19_999))
        values.append(i % 2 == 0 ? magnitude : -magnitude)
    }
    return values + unaryEdgeValues
}

/// Runs `op` on `isa`; nil if it refused.
private func runUnary(_ isa: UInt32, _ op: UInt32, _ x: [Float]) -> [Float]? {
    var y = [Float](repeating: 0, count: x.count)
    let status = x.withUnsafeBufferPointer { xp in
        y.withUnsafeMutableBufferPointer { yp in
            lk_unary_f32_isa(lk_isa(rawValue: isa), lk_unary_op(rawValue: op), xp.baseAddress, yp.baseAddress, x.count)
        }
    }
    return status == 0 ? y : nil
}

/// At most `limit` readable misses of `y` against `unaryCase` on inputs `x`,
/// and the largest error ratio seen.
private func unaryMisses(_ unaryCase: UnaryCase, _ x: [Float], _ y: [Float], limit: Int = 5)
    -> (misses: [String], worst: Double) {
    var misses: [String] = []
    var worst = 0.0
    for i in x.indices {
        let reference = unaryCase.reference(Double(x[i]))
        let ratio = unaryCase.exact
            ? (identical(y[i], Float(reference)) ? 0 : .infinity)
            : errorRatio(y[i], reference)
        worst = max(worst, ratio)
        if ratio > 1, misses.count < limit {
            misses.append("\(unaryCase.name)(\(x[i])) = \(y[i]), want \(reference)")
        }
    }
    return (misses, worst)
}

/// One binary primitive's op and its float64 reference.
struct BinaryCase: Sendable, CustomTestStringConvertible {
    let name: String
    let op: UInt32
    let reference: @Sendable (Double, Double) -> Double

    var testDescription: String { name }
}

private func binary(_ name: String, _ op: lk_binary_op,
                    _ reference: @escaping @Sendable (Double, Double) -> Double) -> BinaryCase {
    BinaryCase(name: name, op: op.rawValue, reference: reference)
}

private func truth(_ value: Bool) -> Double { value ? 1 : 0 }

/// The ops whose float result is the double result rounded: everything but pow,
/// whose reference is checked with the accuracy bound instead.
private let exactBinaryCases: [BinaryCase] = [
    binary("add", LK_ADD) { $0 + $1 },
    binary("sub", LK_SUB) { $0 - $1 },
    binary("mul", LK_MUL) { $0 * $1 },
    binary("div", LK_DIV) { $0 / $1 },
    binary("min", LK_MIN) { $0.isNaN || $1.isNaN ? .nan : Swift.min($0, $1) },
    binary("max", LK_MAX) { $0.isNaN || $1.isNaN ? .nan : Swift.max($0, $1) },
    binary("gt", LK_GT) { truth($0 > $1) },
    binary("ge", LK_GE) { truth($0 >= $1) },
    binary("lt", LK_LT) { truth($0 < $1) },
    binary("le", LK_LE) { truth($0 <= $1) },
    binary("eq", LK_EQ) { truth($0 == $1) },
    binary("ne", LK_NE) { truth($0 != $1) },
    // fmod is exact in float as in double (the remainder is representable).
    binary("fmod", LK_FMOD) { fmod($0, $1) },
    binary("imod", LK_IMOD) { a, b in
        let r = fmod(a, b)
        if r == 0 { return b.sign == .minus ? -0.0 : 0.0 }
        return (r < 0) != (b < 0) ? r + b : r
    },
    binary("and", LK_AND) { truth($0 != 0 && $1 != 0) },
    binary("or", LK_OR) { truth($0 != 0 || $1 != 0) },
    binary("xor", LK_XOR) { truth(($0 != 0) != ($1 != 0)) },
]

/// A binary or select operand: an array (stride 1) or one scalar (stride 0).
private enum Operand {
    case array([Float])
    case scalar(Float)

    func value(_ i: Int) -> Float {
        switch self {
        case .array(let values): values[i]
        case .scalar(let value): value
        }
    }

    /// Calls `body` with the operand's pointer and stride.
    func withPointer<R>(_ body: (UnsafePointer<Float>, Int32) -> R) -> R {
        switch self {
        case .array(let values):
            values.withUnsafeBufferPointer { body($0.baseAddress ?? UnsafePointer(bitPattern: 16)!, 1) }
        case .scalar(let value):
            withUnsafePointer(to: value) { body($0, 0) }
        }
    }
}

private func runBinary(_ isa: UInt32, _ op: UInt32, _ a: Operand, _ b: Operand, count: Int) -> [Float]? {
    var y = [Float](repeating: 0, count: count)
    let status = a.withPointer { ap, aStride in
        b.withPointer { bp, bStride in
            y.withUnsafeMutableBufferPointer { yp in
                lk_binary_f32_isa(lk_isa(rawValue: isa), lk_binary_op(rawValue: op), ap, aStride, bp, bStride,
                                  yp.baseAddress, count)
            }
        }
    }
    return status == 0 ? y : nil
}

private func runSelect(_ isa: UInt32, _ cond: [Float], _ a: Operand, _ b: Operand) -> [Float]? {
    var y = [Float](repeating: 0, count: cond.count)
    let status = cond.withUnsafeBufferPointer { cp in
        a.withPointer { ap, aStride in
            b.withPointer { bp, bStride in
                y.withUnsafeMutableBufferPointer { yp in
                    lk_select_f32_isa(lk_isa(rawValue: isa), cp.baseAddress, ap, aStride, bp, bStride,
                                      yp.baseAddress, cond.count)
                }
            }
        }
    }
    return status == 0 ? y : nil
}

/// Binary operands: special values paired with every other special value,
/// then seeded values of mixed sign and magnitude; 4_103 in all (not a multiple of 16).
/// (0x000116C2 is the subnormal nearest 1e-40, written as bits: Swift warns on a literal that underflows.)
private let specialOperands: [Float] = [0, -0.0, 1, -1, 2.5, -3, .infinity, -.infinity, .nan, Float(bitPattern: 0x0001_16C2), -1e30]
private let binaryCount = 4_103
private let binaryLeft: [Float] = {
    var rng = SeededGenerator(seed: 11)
    let pairs = specialOperands.flatMap { a in specialOperands.map { _ in a } }
    return pairs + (pairs.count..<binaryCount).map { i in
        i % 7 == 0 ? specialOperands[i % specialOperands.count]
                   : Float.random(in: -1...1, using: &rng) * Float(pow(10, Double.random(in: -3...3, using: &rng)))
    }
}()
private let binaryRight: [Float] = {
    var rng = SeededGenerator(seed: 12)
    let pairs = specialOperands.flatMap { _ in specialOperands }
    return pairs + (pairs.count..<binaryCount).map { i in
        // Every fifth value repeats the left one, so equality is exercised.
        i % 5 == 0 ? binaryLeft[i]
                   : Float.random(in: -1...1, using: &rng) * Float(pow(10, Double.random(in: -3...3, using: &rng)))
    }
}()

/// The four stride combinations of one pair of operand sources (scalars
/// taken from `scalarA` and `scalarB`).
private func strideCombinations(_ a: [Float], _ b: [Float], scalarA: Float, scalarB: Float)
    -> [(String, Operand, Operand)] {
    [("array, array", .array(a), .array(b)),
     ("array, scalar \(scalarB)", .array(a), .scalar(scalarB)),
     ("scalar \(scalarA), array", .scalar(scalarA), .array(b)),
     ("scalar \(scalarA), scalar \(scalarB)", .scalar(scalarA), .scalar(scalarB))]
}

/// Pow's operands: positive bases over six decades with exponents in
/// [-30, 30], negative bases with integer and non-integer exponents, and
/// C99's special cases.
private let powPairs: [(Float, Float)] = {
    var rng = SeededGenerator(seed: 13)
    var pairs: [(Float, Float)] = (0..<100_000).map { _ in
        (Float(pow(10, Double.random(in: -3...3, using: &rng))), Float.random(in: -30...30, using: &rng))
    }
    pairs += (0..<20_000).map { _ in
        (-Float(pow(10, Double.random(in: -2...2, using: &rng))), Float(Int.random(in: -20...20, using: &rng)))
    }
    pairs += (0..<2_000).map { _ in (Float.random(in: -100 ... -0.01, using: &rng), Float.random(in: -5...5, using: &rng)) }
    let specials: [Float] = [0, -0.0, 1, -1, 2, -2, 0.5, -0.5, 3, -3, .infinity, -.infinity, .nan,
                             Float(bitPattern: 0x0001_16C2), 1e30, 200, -200]
    for a in specials { for b in specials { pairs.append((a, b)) } }
    pairs += [(-2, 3), (-2, -3), (-8, 1.0 / 3), (2, 128), (2, -149), (2, -150), (10, 38.5), (0.1, 50)]
    return pairs
}()

private func runAffineClamp(_ isa: UInt32, _ x: [Float], _ a: Float, _ b: Float, _ lo: Float, _ hi: Float) -> [Float]? {
    var y = [Float](repeating: 0, count: x.count)
    let status = x.withUnsafeBufferPointer { xp in
        y.withUnsafeMutableBufferPointer { yp in
            lk_affine_clamp_f32_isa(lk_isa(rawValue: isa), xp.baseAddress, a, b, lo, hi, yp.baseAddress, x.count)
        }
    }
    return status == 0 ? y : nil
}

/// The affine clamp's reference: a * x + b rounded once, then max and min with NaN propagating.
private func affineClampReference(_ x: Float, _ a: Float, _ b: Float, _ lo: Float, _ hi: Float) -> Float {
    let v = b.addingProduct(a, x) // fused: one rounding
    if v.isNaN || lo.isNaN || hi.isNaN { return .nan }
    return Swift.min(Swift.max(v, lo), hi)
}

private func runSelectCompare(_ isa: UInt32, _ op: lk_binary_op, _ a: Operand, _ b: Operand, _ t: Operand,
                              _ f: Operand, count: Int) -> [Float]? {
    var y = [Float](repeating: 0, count: count)
    let status = a.withPointer { ap, aStride in
        b.withPointer { bp, bStride in
            t.withPointer { tp, tStride in
                f.withPointer { fp, fStride in
                    y.withUnsafeMutableBufferPointer { yp in
                        lk_select_cmp_f32_isa(lk_isa(rawValue: isa), op, ap, aStride, bp, bStride, tp, tStride,
                                              fp, fStride, yp.baseAddress, count)
                    }
                }
            }
        }
    }
    return status == 0 ? y : nil
}

/// Fills a page-aligned mapping so that `count` floats end exactly at an
/// unreadable guard page: any read or write past the end faults.
private final class GuardedFloats {
    let base: UnsafeMutableRawPointer
    let mappedBytes: Int
    let pointer: UnsafeMutablePointer<Float>

    init(_ values: [Float]) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let dataBytes = (values.count * 4 + page - 1) / page * page
        mappedBytes = dataBytes + page
        base = mmap(nil, mappedBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)!
        mprotect(base + dataBytes, page, PROT_NONE)
        pointer = (base + dataBytes - values.count * 4).bindMemory(to: Float.self, capacity: max(values.count, 1))
        for (i, value) in values.enumerated() { pointer[i] = value }
    }

    deinit { munmap(base, mappedBytes) }
}

@Suite struct VectorMathTests {
    @Test(arguments: unaryCases, isaValues)
    func unaryMatchesDoubleMath(_ unaryCase: UnaryCase, isa: UInt32) throws {
        let x = sweep(unaryCase.range)
        let y = try #require(runUnary(isa, unaryCase.op, x))
        let (misses, worst) = unaryMisses(unaryCase, x, y)
        #expect(misses.isEmpty, "\(isaName(isa)): \(misses)")
        print("VectorMath \(unaryCase.name) \(isaName(isa)): max error \(worst * relativeBound) relative"
            + " over \(x.count) inputs")
    }

    @Test(arguments: unaryCases, isaValues)
    func unaryInPlace(_ unaryCase: UnaryCase, isa: UInt32) throws {
        let x = seededUniform(count: 1_001, in: -5...5, seed: 3).map(abs)
        var y = x
        let status = y.withUnsafeMutableBufferPointer { yp in
            lk_unary_f32_isa(lk_isa(rawValue: isa), lk_unary_op(rawValue: unaryCase.op), yp.baseAddress,
                             yp.baseAddress, yp.count)
        }
        #expect(status == 0)
        #expect(unaryMisses(unaryCase, x, y).misses.isEmpty)
    }

    @Test(arguments: exactBinaryCases, isaValues)
    func binaryMatchesDoubleMathForEveryStride(_ binaryCase: BinaryCase, isa: UInt32) throws {
        for (scalarA, scalarB) in [(Float(2.5), Float(-3)), (.nan, 0), (-0.0, .infinity)] {
            for (label, a, b) in strideCombinations(binaryLeft, binaryRight, scalarA: scalarA, scalarB: scalarB) {
                let y = try #require(runBinary(isa, binaryCase.op, a, b, count: binaryCount))
                var misses: [String] = []
                for i in 0..<binaryCount {
                    let (u, v) = (a.value(i), b.value(i))
                    let expected = Float(binaryCase.reference(Double(u), Double(v)))
                    // Min and max may pick either zero when both are zeros.
                    let zeros = (binaryCase.name == "min" || binaryCase.name == "max") && u == 0 && v == 0
                    if !(zeros ? y[i] == 0 : identical(y[i], expected)), misses.count < 5 {
                        misses.append("\(binaryCase.name)(\(u), \(v)) = \(y[i]), want \(expected)")
                    }
                }
                #expect(misses.isEmpty, "\(isaName(isa)) \(label): \(misses)")
            }
        }
    }

    @Test(arguments: isaValues)
    func powMatchesDoubleMathForEveryStride(isa: UInt32) throws {
        let a = powPairs.map(\.0), b = powPairs.map(\.1)
        let combos = strideCombinations(a, b, scalarA: -2, scalarB: 3)
            + strideCombinations(a, b, scalarA: 0.5, scalarB: -0.5).dropFirst()
            + strideCombinations(a, b, scalarA: .nan, scalarB: 0).dropFirst()
        var worst = 0.0
        for (label, a, b) in combos {
            let y = try #require(runBinary(isa, LK_POW.rawValue, a, b, count: powPairs.count))
            var misses: [String] = []
            for i in y.indices {
                let (u, v) = (a.value(i), b.value(i))
                let reference = pow(Double(u), Double(v))
                let ratio = errorRatio(y[i], reference)
                worst = max(worst, ratio)
                if ratio > 1, misses.count < 5 { misses.append("pow(\(u), \(v)) = \(y[i]), want \(reference)") }
            }
            #expect(misses.isEmpty, "\(isaName(isa)) \(label): \(misses)")
        }
        print("VectorMath pow \(isaName(isa)): max error \(worst * relativeBound) relative")
    }

    @Test func powFollowsC99() throws {
        let cases: [(Float, Float, Float)] = [
            (-2, 3, -8), (-2, 2, 4), (-2, -1, -0.5), (-8, 1.0 / 3, .nan), (.nan, 0, 1), (.nan, -0.0, 1),
            (1, .nan, 1), (-1, .infinity, 1), (0, -1, .infinity), (-0.0, -1, -.infinity), (-0.0, 3, -0.0),
            (0.5, .infinity, 0), (2, .infinity, .infinity), (2, 200, .infinity), (.nan, 1, .nan),
            (-.infinity, 3, -.infinity), (-.infinity, -3, -0.0), (0, 0, 1),
        ]
        for isa in isaValues {
            for (a, b, expected) in cases {
                let y = try #require(runBinary(isa, LK_POW.rawValue, .scalar(a), .array([b]), count: 1))
                #expect(identical(y[0], expected), "\(isaName(isa)): pow(\(a), \(b)) = \(y[0])")
            }
        }
    }

    @Test(arguments: isaValues)
    func selectPicksBitForBit(isa: UInt32) throws {
        var rng = SeededGenerator(seed: 21)
        let cond: [Float] = (0..<1_037).map { i in
            [0, -0.0, .nan, 1, -2, .infinity, Float(bitPattern: 0x0001_16C2), Float.random(in: -1...1, using: &rng)][i % 8]
        }
        let a = seededUniform(count: cond.count, in: -10...10, seed: 22)
        let b = seededUniform(count: cond.count, in: -10...10, seed: 23).enumerated().map { i, v in
            i % 11 == 0 ? -0.0 : v
        }
        for (label, av, bv) in strideCombinations(a, b, scalarA: .nan, scalarB: -0.0) {
            let y = try #require(runSelect(isa, cond, av, bv))
            let misses = cond.indices.filter { i in
                // cond != 0 in C: true for NaN, false for both zeros.
                !identical(y[i], cond[i] != 0 ? av.value(i) : bv.value(i))
            }
            #expect(misses.isEmpty, "\(isaName(isa)) \(label): indices \(misses.prefix(5))")
        }
    }

    /// Lengths 0 through 40, inputs ending at a guard page (a read past the
    /// end would crash the test) and outputs followed by sentinels.
    @Test(arguments: isaValues)
    func tailsTouchOnlyTheirElements(isa: UInt32) {
        let sentinel = Float(bitPattern: 0x7FC0_DEAD)
        let unaryChecked = unaryCases.filter { ["exp", "sigmoid", "softplus", "sin", "abs", "floor"].contains($0.name) }
        for n in 0...40 {
            let values = seededUniform(count: n, in: -5...5, seed: UInt64(100 + n))
            let x = GuardedFloats(values)
            let cond = GuardedFloats(values.map { $0 > 0 ? 1 : 0 })
            let other = GuardedFloats(values.reversed())
            var y = [Float](repeating: sentinel, count: n + 24)
            for unaryCase in unaryChecked {
                y.withUnsafeMutableBufferPointer { yp in
                    _ = lk_unary_f32_isa(lk_isa(rawValue: isa), lk_unary_op(rawValue: unaryCase.op), x.pointer,
                                         yp.baseAddress, n)
                }
                #expect(unaryMisses(unaryCase, values, Array(y[..<n])).misses.isEmpty, "n=\(n)")
                #expect(y[n...].allSatisfy { $0.bitPattern == sentinel.bitPattern },
                        "\(unaryCase.name) n=\(n) wrote past the end")
            }
            let scalar: Float = 0.75
            for (aStride, bStride) in [(1, 1), (1, 0), (0, 1), (0, 0)] as [(Int32, Int32)] {
                withUnsafePointer(to: scalar) { sp in
                    let a = aStride == 1 ? UnsafePointer(x.pointer) : sp
                    let b = bStride == 1 ? UnsafePointer(other.pointer) : sp
                    for op in [LK_ADD, LK_MAX, LK_POW] {
                        y.withUnsafeMutableBufferPointer { yp in
                            _ = lk_binary_f32_isa(lk_isa(rawValue: isa), op, a, aStride, b, bStride, yp.baseAddress, n)
                        }
                        for i in 0..<n {
                            let u = Double(aStride == 1 ? a[i] : a[0]), v = Double(bStride == 1 ? b[i] : b[0])
                            let reference = op == LK_ADD ? u + v : op == LK_MAX ? Swift.max(u, v) : pow(u, v)
                            #expect(errorRatio(y[i], reference) <= 1, "op \(op.rawValue) n=\(n) i=\(i)")
                        }
                        #expect(y[n...].allSatisfy { $0.bitPattern == sentinel.bitPattern }, "n=\(n) wrote past the end")
                    }
                    y.withUnsafeMutableBufferPointer { yp in
                        _ = lk_select_f32_isa(lk_isa(rawValue: isa), cond.pointer, a, aStride, b, bStride,
                                              yp.baseAddress, n)
                    }
                    for i in 0..<n {
                        let expected = values[i] > 0 ? (aStride == 1 ? a[i] : a[0]) : (bStride == 1 ? b[i] : b[0])
                        #expect(identical(y[i], expected), "select n=\(n) i=\(i)")
                    }
                    #expect(y[n...].allSatisfy { $0.bitPattern == sentinel.bitPattern }, "select n=\(n)")
                }
            }
        }
    }

    /// Affine clamp: parameter sets that cover the identity (1, -0), a plain
    /// affine map, a plain clamp, lower > upper, infinite and NaN bounds;
    /// inputs with NaN, infinities, signed zeros and subnormals.
    @Test(arguments: isaValues)
    func affineClampMatchesReference(isa: UInt32) throws {
        let x = binaryLeft + [.nan, -.nan, .infinity, -.infinity, 0, -0.0, Float(bitPattern: 0x0001_16C2), 3e38]
        let params: [(Float, Float, Float, Float)] = [
            (1, -0.0, -.infinity, .infinity), (0.2, 0.5, 0, 1), (-3, 1e-3, -.infinity, .infinity),
            (1, -0.0, -1, 6), (2, 1, 1, -1), (1e30, 0, -.infinity, 1e38), (0.5, -0.25, -0.0, 0),
            (1, 0, .nan, 1), (1, 0, 0, .nan), (0, 2, -1, 1),
        ]
        for (a, b, lo, hi) in params {
            let y = try #require(runAffineClamp(isa, x, a, b, lo, hi))
            let misses = x.indices.filter { i in
                let expected = affineClampReference(x[i], a, b, lo, hi)
                // A zero compared with a zero of the other sign may keep either sign.
                return !(expected == 0 ? y[i] == 0 : identical(y[i], expected))
            }
            let shown = misses.prefix(5).map { "x=\(x[$0]) -> \(y[$0])" }
            #expect(misses.isEmpty, "\(isaName(isa)) (\(a), \(b), \(lo), \(hi)): \(shown)")
        }
        // The identity parameters give every float back bit for bit, -0 and NaN payloads included.
        let y = try #require(runAffineClamp(isa, x, 1, -0.0, -.infinity, .infinity))
        #expect(x.indices.allSatisfy { x[$0].isNaN ? y[$0].isNaN : y[$0].bitPattern == x[$0].bitPattern })
    }

    /// Select with an inline comparison: every comparison, every stride
    /// combination of the four operands, NaN on either side of the comparison.
    @Test(arguments: isaValues)
    func selectCompareMatchesComparisonThenSelect(isa: UInt32) throws {
        let t = seededUniform(count: binaryCount, in: -10...10, seed: 31).enumerated().map { i, v in i % 13 == 0 ? -0.0 : v }
        let f = seededUniform(count: binaryCount, in: -10...10, seed: 32).enumerated().map { i, v in i % 17 == 0 ? .nan : v }
        let comparisons: [(lk_binary_op, (Float, Float) -> Bool)] = [
            (LK_GT, { $0 > $1 }), (LK_GE, { $0 >= $1 }), (LK_LT, { $0 < $1 }), (LK_LE, { $0 <= $1 }),
            (LK_EQ, { $0 == $1 }), (LK_NE, { $0 != $1 }),
        ]
        for (op, compare) in comparisons {
            for (label, a, b) in strideCombinations(binaryLeft, binaryRight, scalarA: .nan, scalarB: 0.5)
                + strideCombinations(binaryLeft, binaryRight, scalarA: 2.5, scalarB: -0.0) {
                for (tv, fv) in [(Operand.array(t), Operand.array(f)), (.scalar(0), .array(f)), (.array(t), .scalar(-0.0)),
                                 (.scalar(1), .scalar(.nan))] {
                    let y = try #require(runSelectCompare(isa, op, a, b, tv, fv, count: binaryCount))
                    let misses = y.indices.filter { i in
                        !identical(y[i], compare(a.value(i), b.value(i)) ? tv.value(i) : fv.value(i))
                    }
                    #expect(misses.isEmpty, "\(isaName(isa)) op \(op.rawValue) \(label): indices \(misses.prefix(5))")
                }
            }
        }
        var y: [Float] = [42]
        let one: [Float] = [1]
        let refused = y.withUnsafeMutableBufferPointer { yp in
            lk_select_cmp_f32_isa(lk_isa(rawValue: isa), LK_ADD, one, 1, one, 1, one, 1, one, 1, yp.baseAddress, 1)
        }
        #expect(refused == -1 && y == [42])
    }

    /// Lengths 0 through 40 with inputs ending at a guard page and sentinels
    /// after the output, for both new primitives.
    @Test(arguments: isaValues)
    func fusedPrimitivesTouchOnlyTheirElements(isa: UInt32) {
        let sentinel = Float(bitPattern: 0x7FC0_DEAD)
        for n in 0...40 {
            let values = seededUniform(count: n, in: -5...5, seed: UInt64(300 + n))
            let x = GuardedFloats(values), other = GuardedFloats(values.reversed())
            var y = [Float](repeating: sentinel, count: n + 24)
            y.withUnsafeMutableBufferPointer { yp in
                _ = lk_affine_clamp_f32_isa(lk_isa(rawValue: isa), x.pointer, 0.3, 0.4, 0, 1, yp.baseAddress, n)
            }
            for i in 0..<n { #expect(identical(y[i], affineClampReference(values[i], 0.3, 0.4, 0, 1)), "n=\(n) i=\(i)") }
            #expect(y[n...].allSatisfy { $0.bitPattern == sentinel.bitPattern }, "affine clamp n=\(n)")
            let scalar: Float = 0.75
            for strides in [(1, 1, 1, 1), (1, 0, 0, 1), (0, 1, 1, 0), (0, 0, 0, 0)] as [(Int32, Int32, Int32, Int32)] {
                withUnsafePointer(to: scalar) { sp in
                    let a = strides.0 == 1 ? UnsafePointer(x.pointer) : sp
                    let b = strides.1 == 1 ? UnsafePointer(other.pointer) : sp
                    let t = strides.2 == 1 ? UnsafePointer(x.pointer) : sp
                    let f = strides.3 == 1 ? UnsafePointer(other.pointer) : sp
                    y.withUnsafeMutableBufferPointer { yp in
                        _ = lk_select_cmp_f32_isa(lk_isa(rawValue: isa), LK_GE, a, strides.0, b, strides.1, t, strides.2,
                                                  f, strides.3, yp.baseAddress, n)
                    }
                    for i in 0..<n {
                        let pick = a[strides.0 == 1 ? i : 0] >= b[strides.1 == 1 ? i : 0]
                        let expected = pick ? t[strides.2 == 1 ? i : 0] : f[strides.3 == 1 ? i : 0]
                        #expect(identical(y[i], expected), "select cmp n=\(n) i=\(i)")
                    }
                    #expect(y[n...].allSatisfy { $0.bitPattern == sentinel.bitPattern }, "select cmp n=\(n)")
                }
            }
        }
    }

    /// Pow with the scalar exponents that run without pow: exact where the
    /// result is one rounding (0, 1, 2, -1, 0.5), within the bound otherwise;
    /// C99's special cases through the same paths.
    @Test(arguments: isaValues)
    func powSmallExponentsMatchDoubleMath(isa: UInt32) throws {
        let bases = powPairs.map(\.0) + binaryLeft + [0, -0.0, .infinity, -.infinity, .nan, 1e-20, -1e-20, 1e19, 8e37,
                                                     Float(bitPattern: 0x0001_16C2), .greatestFiniteMagnitude]
        for exponent: Float in [0, -0.0, 1, 2, -1, 0.5, 3, -2] {
            let exact = [0, 1, 2, -1, 0.5].contains(exponent)
            let y = try #require(runBinary(isa, LK_POW.rawValue, .array(bases), .scalar(exponent), count: bases.count))
            let misses = bases.indices.filter { i in
                let u = Double(bases[i])
                // The exact cases' correctly rounded references, without relying on libm's pow rounding.
                let reference = switch exponent {
                case 2: u * u
                case -1: 1 / u
                case 0.5: u == -.infinity ? .infinity : sqrt(u) + 0
                default: pow(u, Double(exponent))
                }
                return exact ? !identical(y[i], Float(reference)) : errorRatio(y[i], reference) > 1
            }
            let shown = misses.prefix(5).map { "pow(\(bases[$0]), \(exponent)) = \(y[$0])" }
            #expect(misses.isEmpty, "\(isaName(isa)) exponent \(exponent): \(shown)")
        }
    }

    @Test func dispatchRefusesUnknownOpsAndLeavesOutputAlone() {
        var y: [Float] = [42]
        let x: [Float] = [1]
        let badUnary = y.withUnsafeMutableBufferPointer { yp in
            lk_unary_f32_isa(lk_kernels_isa(), lk_unary_op(rawValue: LK_UNARY_OP_COUNT.rawValue), x, yp.baseAddress, 1)
        }
        let badBinary = y.withUnsafeMutableBufferPointer { yp in
            lk_binary_f32_isa(lk_kernels_isa(), lk_binary_op(rawValue: 99), x, 1, x, 1, yp.baseAddress, 1)
        }
        let badISA = y.withUnsafeMutableBufferPointer { yp in
            lk_unary_f32_isa(lk_isa(rawValue: lk_kernels_isa().rawValue + 1), LK_EXP, x, yp.baseAddress, 1)
        }
        #expect(badUnary == -1 && badBinary == -1 && badISA == -1)
        #expect(y == [42])
        // The dispatching entry points run the best path.
        y.withUnsafeMutableBufferPointer { yp in lk_unary_f32(LK_NEG, x, yp.baseAddress, 1) }
        #expect(y == [-1])
    }
}
