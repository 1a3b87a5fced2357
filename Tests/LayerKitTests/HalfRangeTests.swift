import CKernels
import Foundation
import Testing
@testable import LayerKit

/// `HalfRange`: which tensors fp16 storage cannot keep, judged against
/// fp16's limits (65504, 2^-14, 2048), and the parity rule's NMSE bound.
struct HalfRangeTests {
    func range(_ values: [Float]) throws -> HalfRange? {
        HalfRange(checking: try Tensor(shape: [values.count], values: values))
    }

    @Test func ordinaryValuesAreKept() throws {
        #expect(try range([0, 1e-7, -0.5, 1, 255, 2048, 4096, 10000, -65504, .infinity, .nan]) == nil)
        // Tiny values fp16 already holds exactly (subnormals, a tensor rounded to fp16) lose nothing.
        #expect(try range([0, 0x1p-24, -0x1p-20, 3 * 0x1p-24]) == nil)
    }

    /// `lk_half_scan_f32` counts an element as changed exactly when the
    /// `Float16` round trip changes it, on both paths: a sweep of bit
    /// patterns and fp16's range edges, each sign, one element at a time.
    @Test func exactnessMatchesTheFloat16RoundTrip() {
        var patterns = Array(stride(from: UInt32(0), to: 0x7f80_0000, by: 4099))
        for edge: Float in [65504, 65505, 65520, 0x1p-14, 0x1p-24, 0x1.8p-24, 0x1p-25, 0x1.ffcp-15, 0x1.ffep-15, 2048, 2049, 4098] {
            patterns += [edge.bitPattern, edge.bitPattern &+ 1, edge.bitPattern &- 1]
        }
        for isa in [LK_ISA_SCALAR, LK_ISA_AVX2_FMA] {
            var wrong: [Float] = []
            for bits in patterns {
                for var x in [Float(bitPattern: bits), -Float(bitPattern: bits)] where x.isFinite {
                    var scan = lk_half_scan()
                    lk_half_scan_f32_isa(isa, &x, 1, &scan)
                    if (scan.changed == 1) != (Float(Float16(x)) != x) { wrong.append(x) }
                }
            }
            #expect(wrong.isEmpty, "\(String(cString: lk_isa_name(isa))): \(wrong.prefix(8))")
        }
    }

    /// Both paths give the same scan, and its counts and extremes are the
    /// elementwise ones: finite values of every magnitude, infinities and
    /// NaNs (skipped), ±0, in an array with a tail past any vector width.
    @Test func bothPathsScanAsTheElementwiseDefinition() {
        var values: [Float] = [.infinity, -.infinity, .nan, 0, -0.0, 70000, -65520, 65504, 3000.5, -2049, 1e-9, 6e-5]
        var random = SeededGenerator(seed: 29)
        for _ in 0..<1003 { values.append(Float(bitPattern: UInt32.random(in: 0...UInt32.max, using: &random))) }
        let finite = values.filter(\.isFinite)
        let lost = finite.filter { Float(Float16($0)) != $0 }
        for isa in [LK_ISA_SCALAR, LK_ISA_AVX2_FMA] {
            var scan = lk_half_scan()
            lk_half_scan_f32_isa(isa, values, values.count, &scan)
            let name = String(cString: lk_isa_name(isa))
            #expect(Int(scan.overflows) == finite.filter { abs($0) > 65504 }.count, "\(name)")
            #expect(Int(scan.changed) == lost.count, "\(name)")
            #expect(Int(scan.changed_beyond_integers) == lost.filter { abs($0) > 2048 && abs($0) <= 65504 }.count, "\(name)")
            #expect(Float(bitPattern: scan.largest_magnitude) == finite.map(abs).max(), "\(name)")
            #expect(lk_half_scan_float(scan.lowest) == finite.min(), "\(name)")
            #expect(lk_half_scan_float(scan.highest) == finite.max(), "\(name)")
        }
    }

    @Test func eachLossCountsItsElementsAndGivesTheRange() throws {
        let overflow = try #require(try range([70000, -1, 2, 3]))
        #expect(overflow.loss == .overflow && overflow.elements == 1 && overflow.lowest == -1 && overflow.highest == 70000)
        let underflow = try #require(try range([1e-9, -3e-9, 0, 6e-5]))
        #expect(underflow.loss == .underflow && underflow.elements == 3 && underflow.count == 4)
        // 10000 is a multiple of 8, fp16's spacing there; 10001..10003 are not.
        let integers = try #require(try range([10000, 10001, 10002, 10003]))
        #expect(integers.loss == .lostIntegerBits && integers.elements == 3)
        #expect(integers.description.contains("(values 10000..10003)"))
    }

    @Test func nmseAboveTheBoundFailsAResultWithinTheAbsoluteTolerance() throws {
        let cpu = try Tensor(shape: [4], values: [1e-9, 2e-9, 3e-9, 4e-9])
        let lost = try ParityReport(gpu: try Tensor(shape: [4]), cpu: cpu)
        #expect(lost.failures == 0 && lost.nmse == 1 && lost.valuesLost && !lost.passed)
        #expect(lost.description.hasPrefix("FAIL: values lost"))
        // An all-zero reference is judged by the elementwise rule alone.
        let zero = try ParityReport(gpu: try Tensor(shape: [4], values: [1e-4, 0, 0, 0]), cpu: try Tensor(shape: [4]))
        #expect(zero.passed)
    }
}
