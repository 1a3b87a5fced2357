import Foundation

/// How far a GPU result is from the CPU reference, with LayerKit's parity
/// rule: elementwise `|gpu - cpu| <= tolerance * max(1, |cpu|)`, and over
/// the whole result `NMSE <= maxNMSE`.
///
/// NaN matches NaN and an infinity matches the same infinity; any other
/// pairing involving a non-finite value is a non-finite mismatch and fails.
///
/// The elementwise rule is absolute below 1, so values far below 1 pass
/// it whatever the GPU made of them: logits of 1e-9 that fp16 storage
/// turned into 0 are within 1e-3 of the truth. The NMSE bound catches
/// that: a result whose error carries more than 1% of the reference's
/// energy has lost its values (all zeros where the CPU's are not gives an
/// NMSE of 1), while fp16 rounding alone gives about 1e-7.
public struct ParityReport: Sendable, Equatable, CustomStringConvertible {
    /// The relative tolerance (1e-3 by default: fp16 storage).
    public let tolerance: Double
    /// Elements compared.
    public let count: Int
    /// Largest `|gpu - cpu|` over finite pairs.
    public let maxAbsError: Double
    /// Largest `|gpu - cpu| / max(1, |cpu|)` over finite pairs: the quantity
    /// the tolerance bounds.
    public let maxRelError: Double
    /// Largest distance in fp16 units in the last place, after rounding the
    /// CPU value to fp16 (the GPU value already is).
    public let maxULPs: Int
    /// `sum (gpu - cpu)^2 / sum cpu^2` over finite pairs (0 when cpu is all 0).
    public let nmse: Double
    /// Pairs where exactly one side is non-finite, or infinities differ.
    public let nonFiniteMismatches: Int
    /// Finite pairs beyond the tolerance.
    public let failures: Int
    /// The index of the worst finite pair (nil if there is none).
    public let worstIndex: Int?

    /// The largest NMSE a passing result may have: far above what fp16
    /// rounding gives (about 1e-7), far below a result whose values were
    /// destroyed (about 1).
    public static let maxNMSE = 1e-2

    /// Whether the NMSE shows the GPU's values lost (above `maxNMSE`),
    /// though each element may be within the (absolute, below 1)
    /// tolerance. Never for an all-zero reference: its NMSE is a plain sum
    /// of squared errors, which the elementwise rule already bounds.
    public let valuesLost: Bool

    /// Every element agrees, and together they keep the reference's values.
    public var passed: Bool { failures == 0 && nonFiniteMismatches == 0 && !valuesLost }

    /// The verdict and the key figures on one line:
    /// `PASS: 48 elements, max abs 1.221e-04, max rel 9.766e-04, max fp16 ulps 1, NMSE 3.100e-09,
    /// 0 non-finite mismatches (tolerance 0.001)`; a failure counts the
    /// elements outside the tolerance and names the worst, or says the
    /// NMSE shows the values lost.
    public var description: String {
        func scientific(_ value: Double) -> String { String(format: "%.3e", value) }
        let bad = failures + nonFiniteMismatches
        let verdict = passed ? "PASS: \(count) elements" : bad == 0
            ? "FAIL: values lost, NMSE above \(ParityReport.maxNMSE)"
            : "FAIL: \(bad) of \(count) elements outside the tolerance"
        let worst = passed ? "" : worstIndex.map { ", worst #\($0)" } ?? ""
        return "\(verdict), max abs \(scientific(maxAbsError)), max rel \(scientific(maxRelError)), "
            + "max fp16 ulps \(maxULPs), NMSE \(scientific(nmse)), \(nonFiniteMismatches) non-finite mismatches"
            + "\(worst) (tolerance \(tolerance))"
    }

    /// Compares `gpu` against the reference `cpu` (same count).
    public init(gpu: Tensor, cpu: Tensor, tolerance: Double = 1e-3) throws {
        guard gpu.count == cpu.count else {
            throw LayerKitError.shapeMismatch(
                "parity: \(Tensor.describe(gpu.shape)) vs \(Tensor.describe(cpu.shape))")
        }
        self.tolerance = tolerance
        count = cpu.count
        var maxAbs = 0.0, maxRel = 0.0, ulps = 0, nonFinite = 0, failed = 0
        var errorSquares = 0.0, referenceSquares = 0.0
        var worst: Int?
        for i in 0..<cpu.count {
            let g = gpu[i], c = cpu[i]
            guard g.isFinite, c.isFinite else {
                let same = (g.isNaN && c.isNaN) || (g.isInfinite && g == c)
                if !same { nonFinite += 1 }
                continue
            }
            let error = abs(Double(g) - Double(c))
            let relative = error / max(1, abs(Double(c)))
            if error > maxAbs { maxAbs = error }
            if worst == nil || relative > maxRel { maxRel = relative; worst = i }
            if relative > tolerance { failed += 1 }
            ulps = max(ulps, ParityReport.halfULPDistance(g, c))
            errorSquares += error * error
            referenceSquares += Double(c) * Double(c)
        }
        maxAbsError = maxAbs
        maxRelError = maxRel
        maxULPs = ulps
        nmse = referenceSquares > 0 ? errorSquares / referenceSquares : errorSquares
        valuesLost = referenceSquares > 0 && nmse > ParityReport.maxNMSE
        nonFiniteMismatches = nonFinite
        failures = failed
        worstIndex = worst
    }

    /// Distance between the fp16 roundings of `a` and `b` in fp16 ulps,
    /// counted across the sign (via the monotone integer order of fp16 bits).
    static func halfULPDistance(_ a: Float, _ b: Float) -> Int {
        func ordered(_ x: Float) -> Int {
            let bits = Int(Float16(x).bitPattern)
            return bits & 0x8000 != 0 ? -(bits & 0x7FFF) : bits
        }
        return abs(ordered(a) - ordered(b))
    }
}

extension ParityReport {
    /// Runs `layer` on `input` on the GPU of `context` and on the CPU, and
    /// compares them. Round `input` to fp16 first (`roundedToHalf()`) so
    /// both sides read the same values.
    public static func compare(_ layer: Layer, input: Tensor, context: GPUContext,
                               tolerance: Double = 1e-3) throws -> (report: ParityReport, gpu: Tensor, cpu: Tensor) {
        guard layer.hasGPUImplementation else {
            throw LayerKitError.unsupported("\(layer.layerName) has no GPU implementation to compare")
        }
        let gpuRun = try Backend(computeUnits: .gpu, context: context).run(layer, inputs: [input])
        let cpuRun = try Backend(computeUnits: .cpuOnly).run(layer, inputs: [input])
        guard let gpu = gpuRun.outputs.first, let cpu = cpuRun.outputs.first else {
            throw LayerKitError.shapeMismatch("\(layer.layerName) produced no output")
        }
        return (try ParityReport(gpu: gpu, cpu: cpu, tolerance: tolerance), gpu, cpu)
    }
}
