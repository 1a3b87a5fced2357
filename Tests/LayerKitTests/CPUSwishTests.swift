import CKernels
import Foundation
import Testing
@testable import LayerKit

/// Swish in Double as its formula x * sigmoid(beta * x) evaluates in IEEE
/// arithmetic: at infinite x, x where beta*x -> +inf and inf * 0 = NaN where
/// beta*x -> -inf (as onnxruntime returns). x / (1 + exp(-beta*x)) would
/// give NaN in both cases (inf/inf), so infinities are taken apart.
private func swishReference(_ x: Float, beta: Float) -> Double {
    let x = Double(x), beta = Double(beta)
    if x.isInfinite && beta != 0 {
        return beta * x > 0 ? x : .nan
    }
    return x / (1 + exp(-beta * x))
}

/// Where `actual` misses the reference by more than 1e-5 relative, as
/// readable lines (at most `limit`). Below 1e-32 the relative bound gives way
/// to an absolute one of 1e-37: results under Float's smallest normal
/// (1.2e-38) have fewer significant bits, and the kernel may flush results
/// it knows are below 1e-37 to zero.
private func misses(_ input: [Float], _ actual: [Float], beta: (Int) -> Float,
                    limit: Int = 5) -> [String] {
    var found: [String] = []
    for i in input.indices {
        let ref = swishReference(input[i], beta: beta(i))
        let y = Double(actual[i])
        let ok: Bool
        if ref.isNaN {
            ok = y.isNaN
        } else if ref.isInfinite {
            ok = y == ref
        } else {
            ok = abs(y - ref) <= max(1e-5 * abs(ref), 1e-37)
        }
        if !ok {
            found.append("x=\(input[i]) beta=\(beta(i)): got \(actual[i]), want \(ref)")
            if found.count == limit { break }
        }
    }
    return found
}

/// The kernel paths this CPU can run: scalar always, then each vector set up
/// to the best (each implies the ones before it).
private let paths: [lk_isa] = (0...lk_kernels_isa().rawValue).map { lk_isa(rawValue: $0) }

private func evaluator(threads: Int, isa: lk_isa) throws -> CPUEvaluator {
    try #require(CPUEvaluator(threadCount: threads).forcing(isa))
}

private func name(_ isa: lk_isa) -> String { String(cString: lk_isa_name(isa)) }

/// Edge cases first, then seeded uniform [-10, 10]: 1_000_003 elements is
/// neither a multiple of 8 nor of the chunk size.
private let mixedInput = edgeCaseFloats
    + seededUniform(count: 1_000_003 - edgeCaseFloats.count, in: -10...10, seed: 7)

@Suite struct CPUSwishTests {
    @Test(arguments: [Float(1), 0.01, 3], [1, 2, 3])
    func matchesReference(beta: Float, threads: Int) throws {
        let input = try Tensor(shape: [mixedInput.count], values: mixedInput)
        for isa in paths {
            let output = try Tensor(shape: input.shape)
            try evaluator(threads: threads, isa: isa).swish(input, into: output, beta: beta)
            let bad = misses(mixedInput, output.values, beta: { _ in beta })
            #expect(bad.isEmpty, "\(name(isa)): \(bad)")
        }
    }

    @Test func edgeCasesFollowTheFormula() throws {
        let input = try Tensor(shape: [edgeCaseFloats.count], values: edgeCaseFloats)
        for isa in paths {
            let output = try Tensor(shape: input.shape)
            try evaluator(threads: 1, isa: isa).swish(input, into: output, beta: 1)
            let y = output.values
            #expect(y[0] == 0 && y[0].sign == .plus, "\(name(isa)): swish(+0)")
            #expect(y[1] == 0 && y[1].sign == .minus, "\(name(isa)): swish(-0)")
            #expect(y[10] == .infinity, "\(name(isa)): swish(+inf)")
            #expect(y[11].isNaN, "\(name(isa)): swish(-inf) = -inf * sigmoid(-inf) = -inf * 0")
            #expect(y[12].isNaN, "\(name(isa)): swish(NaN)")
        }
    }

    @Test func largeNegativeInputsWithSmallBetaStayAccurate() throws {
        // beta*x past 88.7, where exp overflows Float, yet y ~ 1e-35 is a
        // normal float: the kernel must not flush it to zero.
        let values: [Float] = [-8873, -8900, -9000, -9400, -1e4]
        let input = try Tensor(shape: [values.count], values: values)
        for isa in paths {
            let output = try Tensor(shape: input.shape)
            try evaluator(threads: 1, isa: isa).swish(input, into: output, beta: 0.01)
            #expect(output[0] < -1e-35, "\(name(isa))")
            #expect(misses(values, output.values, beta: { _ in 0.01 }).isEmpty, "\(name(isa))")
        }
    }

    @Test(arguments: [1, 2, 3])
    func perChannelBeta(threads: Int) throws {
        // Planes of 33_633 elements, so 64K chunks start and end mid-plane.
        let shape = [2, 3, 101, 333]
        let plane = 101 * 333
        let values = seededUniform(count: 2 * 3 * plane, in: -10...10, seed: 11)
        let betas: [Float] = [1, 0.01, 3]
        let input = try Tensor(shape: shape, values: values)
        for isa in paths {
            let output = try Tensor(shape: shape)
            try evaluator(threads: threads, isa: isa).swish(input, into: output, channelBeta: betas)
            let bad = misses(values, output.values, beta: { betas[($0 / plane) % 3] })
            #expect(bad.isEmpty, "\(name(isa)): \(bad)")
        }
    }

    @Test(arguments: [1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 1000])
    func vectorTailsStayInBounds(count: Int) throws {
        // The C kernel directly, with sentinels after the last element.
        let values = seededUniform(count: count, in: -10...10, seed: UInt64(count))
        for isa in paths {
            var out = [Float](repeating: 12345, count: count + 9)
            let status = out.withUnsafeMutableBufferPointer { y in
                values.withUnsafeBufferPointer { x in
                    lk_swish_f32_isa(isa, x.baseAddress, y.baseAddress, count, 1.5)
                }
            }
            #expect(status == 0)
            #expect(misses(values, Array(out[..<count]), beta: { _ in 1.5 }).isEmpty, "\(name(isa))")
            #expect(out[count...].allSatisfy { $0 == 12345 }, "\(name(isa)) wrote past the end")
        }
    }

    @Test func pathsAgree() throws {
        // One algorithm on every path: they differ only in rounding (FMA).
        let input = try Tensor(shape: [mixedInput.count], values: mixedInput)
        let results = try paths.map { isa in
            let output = try Tensor(shape: input.shape)
            try evaluator(threads: 2, isa: isa).swish(input, into: output, beta: 1)
            return output.values
        }
        for (isa, result) in zip(paths, results).dropFirst() {
            let worst = zip(results[0], result).map { a, b in
                a == b || (a.isNaN && b.isNaN) ? 0 : abs(a - b) / max(abs(a), 1e-30)
            }.max() ?? 0
            #expect(worst < 1e-6, "\(name(isa)) vs scalar")
        }
    }

    @Test func worksInPlace() throws {
        let values = seededUniform(count: 100_000, in: -10...10, seed: 3)
        let tensor = try Tensor(shape: [values.count], values: values)
        try CPUEvaluator(threadCount: 2).swish(tensor, into: tensor, beta: 1)
        #expect(misses(values, tensor.values, beta: { _ in 1 }).isEmpty)
    }

    @Test func emptyTensorIsFine() throws {
        let empty = try Tensor(shape: [1, 0, 4, 4])
        try CPUEvaluator().swish(empty, into: empty, beta: 1)
        try CPUEvaluator().swish(empty, into: empty, channelBeta: [])
    }

    @Test func wrongChannelBetaCountThrows() throws {
        let input = try Tensor(shape: [1, 3, 2, 2])
        let output = try Tensor(shape: [1, 3, 2, 2])
        #expect {
            try CPUEvaluator().swish(input, into: output, channelBeta: [1, 2])
        } throws: { error in
            guard case LayerKitError.invalidWeights(let message) = error else { return false }
            return message.contains("expected 3") && message.contains("got 2")
        }
    }

    @Test func nonFiniteBetaThrows() throws {
        let t = try Tensor(shape: [1, 2, 2, 2])
        #expect(throws: LayerKitError.self) { try CPUEvaluator().swish(t, into: t, beta: .nan) }
        #expect(throws: LayerKitError.self) {
            try CPUEvaluator().swish(t, into: t, channelBeta: [1, .infinity])
        }
    }

    @Test func mismatchedShapesThrow() throws {
        let input = try Tensor(shape: [1, 3, 2, 2])
        let output = try Tensor(shape: [1, 3, 2, 3])
        #expect {
            try CPUEvaluator().swish(input, into: output, beta: 1)
        } throws: { error in
            guard case LayerKitError.shapeMismatch(let message) = error else { return false }
            return message.contains("1x3x2x3") && message.contains("1x3x2x2")
        }
        #expect(throws: LayerKitError.self) {
            try CPUEvaluator().swish(input, into: output, channelBeta: [1, 1, 1])
        }
    }

    /// Per-channel values follow ONNX's channel axis at any rank: axis 1 of a
    /// rank-5 tensor. Beta 0 halves x; beta 1 is x * sigmoid(x).
    @Test func channelBetaFollowsAxisOneAtRankFive() throws {
        let x: [Float] = [1, -2, 3, -4]
        let input = try Tensor(shape: [1, 2, 1, 1, 2], values: x)
        let output = try Tensor(shape: input.shape)
        try CPUEvaluator().swish(input, into: output, channelBeta: [1, 0])
        let expected = [Double(x[0]) / (1 + exp(-Double(x[0]))), Double(x[1]) / (1 + exp(-Double(x[1]))),
                        Double(x[2]) / 2, Double(x[3]) / 2]
        for (got, want) in zip(output.values, expected) { #expect(abs(Double(got) - want) <= 1e-6 * max(1, abs(want))) }
    }

    @Test func reportsInstructionSet() {
        #expect(["avx512f", "avx2+fma", "scalar"].contains(CPUEvaluator.instructionSet))
    }
}

@Suite struct ForEachChunkTests {
    @Test(arguments: [1, 2, 3, 8])
    func coversEveryIndexOnce(threads: Int) throws {
        let hits = try Tensor(shape: [1000])
        forEachChunk(count: 1000, chunkSize: 7, threadCount: threads) { range in
            for i in range { hits[i] += 1 }
        }
        #expect(hits.values.allSatisfy { $0 == 1 })
    }

    @Test func zeroCountRunsNothing() {
        forEachChunk(count: 0, threadCount: 4) { _ in Issue.record("body ran for count 0") }
    }
}
