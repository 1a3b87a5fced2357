import CKernels
import Testing
@testable import LayerKit

/// One Gemm to check: sizes, flags and the form of C.
struct GemmCase: CustomTestStringConvertible, Sendable {
    var n: Int, k: Int, m: Int
    var transA = false, transB = false
    var alpha: Float = 1, beta: Float = 1
    var cShape: [Int]? = nil

    var testDescription: String {
        "N\(n) K\(k) M\(m) transA \(transA) transB \(transB) alpha \(alpha) beta \(beta) C \(cShape.map(Tensor.describe) ?? "none")"
    }

    var aShape: [Int] { transA ? [k, n] : [n, k] }

    func layer(seed: UInt64) throws -> (Gemm, b: Tensor, c: Tensor?) {
        let b = try seededTensor(transB ? [m, k] : [k, m], seed: seed)
        let c = try cShape.map { try seededTensor($0, seed: seed + 1) }
        return (try Gemm(b: b, c: c, alpha: alpha, beta: beta, transA: transA, transB: transB), b, c)
    }

    /// alpha * A' * B' + beta * C in float64, C broadcast by its own strides.
    func reference(a: Tensor, b: Tensor, c: Tensor?) -> [Double] {
        let cRows = (cShape?.count ?? 0) == 2 ? cShape![0] : 1
        let cColumns = cShape?.last ?? 1
        var out: [Double] = []
        for i in 0..<n {
            for j in 0..<m {
                var sum = 0.0
                for p in 0..<k {
                    sum += Double(transA ? a[p * n + i] : a[i * k + p]) * Double(transB ? b[j * k + p] : b[p * m + j])
                }
                var value = Double(alpha) * sum
                if let c {
                    value += Double(beta) * Double(c[(cRows == 1 ? 0 : i) * cColumns + (cColumns == 1 ? 0 : j)])
                }
                out.append(value)
            }
        }
        return out
    }

    /// Whether the GPU runs it: A not transposed, C absent or one value per column.
    var runsOnGPU: Bool {
        !transA && (cShape == nil || cShape == [] || cShape == [1] || cShape == [m] || cShape == [1, m] || cShape == [1, 1])
    }
}

struct GemmTests {
    static let cases: [GemmCase] = {
        var cases: [GemmCase] = []
        for transA in [false, true] {
            for transB in [false, true] {
                cases.append(GemmCase(n: 3, k: 5, m: 6, transA: transA, transB: transB, alpha: 0.5, beta: 2, cShape: [6]))
            }
        }
        for cShape in [[], [1], [7], [1, 7], [5, 1], [5, 7], [1, 1]] {
            cases.append(GemmCase(n: 5, k: 9, m: 7, alpha: -1.5, beta: 0.25, cShape: cShape))
        }
        cases += [
            GemmCase(n: 1, k: 1, m: 1),
            GemmCase(n: 1, k: 300, m: 10, cShape: [10]),
            GemmCase(n: 2, k: 64, m: 130, transB: true, cShape: [130]),
            // One or two rows with transB: B's rows read in place (lk_sgemv_f32_bt).
            GemmCase(n: 1, k: 1283, m: 1003, transB: true, cShape: [1003]),  // threads, a K tail
            GemmCase(n: 2, k: 37, m: 6, transA: true, transB: true, alpha: 0.5, beta: 2, cShape: [2, 6]),
            GemmCase(n: 1, k: 16, m: 5, transB: true, cShape: [1, 1]),
            GemmCase(n: 17, k: 33, m: 3, transA: true, cShape: [17, 1]),
            GemmCase(n: 4, k: 600, m: 700, cShape: [1, 700]),  // threads, K past a block
        ] + fewRows
        return cases
    }()

    /// One or two rows by a row-major B of more than 128 rows (`Gemm.evaluateFewRows`):
    /// B's rows in blocks, a last short one, each kind of C.
    static let fewRows = [
        GemmCase(n: 2, k: 700, m: 300, cShape: [2, 300]),
        GemmCase(n: 2, k: 300, m: 9, transA: true, alpha: 0.5, beta: 2, cShape: [2, 1]),
        GemmCase(n: 1, k: 513, m: 40),
        GemmCase(n: 1, k: 129, m: 1000, alpha: -1.5, cShape: [1000]),
    ]

    /// The blocks' partial rows are added in block order on any thread count.
    @Test(arguments: fewRows)
    func fewRowsGiveTheSameBitsOnAnyThreadCount(_ c: GemmCase) throws {
        let (layer, _, _) = try c.layer(seed: 51)
        let a = try seededTensor(c.aShape, seed: 52)
        let bits = try [1, 2, 3].map { threads in
            layer.threadCount = threads
            let y = try Tensor(shape: [c.n, c.m])
            try CPUThreads.with(threads) { try layer.evaluate(inputs: [a], outputs: [y]) }
            return y.values.map(\.bitPattern)
        }
        #expect(bits[0] == bits[1] && bits[1] == bits[2], "\(c.testDescription)")
    }

    @Test(arguments: cases)
    func cpuMatchesTheDefinition(_ c: GemmCase) throws {
        let (layer, b, cTensor) = try c.layer(seed: 31)
        let a = try seededTensor(c.aShape, seed: 32)
        #expect(try layer.outputShapes(forInputShapes: [c.aShape]) == [[c.n, c.m]])
        let y = try Tensor(shape: [c.n, c.m])
        for threads in [1, 2] {
            layer.threadCount = threads
            try layer.evaluate(inputs: [a], outputs: [y])
            expectClose(y.values, c.reference(a: a, b: b, c: cTensor), relative: sumTolerance(terms: c.k),
                        "\(c.testDescription) on \(threads) threads")
        }
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: cases)
    func gpuMatchesTheDefinitionOrSaysItCannot(_ c: GemmCase) throws {
        let (layer, b, cTensor) = try c.layer(seed: 41)
        #expect(layer.hasGPUImplementation == c.runsOnGPU, "\(c.testDescription)")
        guard c.runsOnGPU else { return }
        let a = try seededTensor(c.aShape, seed: 42).roundedToHalf()
        let y = try runOnGPU(layer, input: a.reshaped(to: [c.n, c.k, 1, 1]), outputShape: [c.n, c.m, 1, 1])
        expectClose(y.values, c.reference(a: a, b: b, c: cTensor), relative: 1e-3, c.testDescription)
    }

    @Test func matMulKeepsItsName() throws {
        let layer = try Gemm(b: Tensor(shape: [2, 3]), name: "MatMul")
        #expect(layer.layerName == "MatMul")
        #expect(try Gemm(b: Tensor(shape: [2, 3])).layerName == "Gemm")
    }

    @Test func badShapesThrow() throws {
        #expect(throws: LayerKitError.self) { try Gemm(b: Tensor(shape: [2, 3, 1])) }
        #expect(throws: LayerKitError.self) { try Gemm(b: Tensor(shape: [0, 3])) }
        #expect(throws: LayerKitError.self) { try Gemm(b: Tensor(shape: [2, 3]), c: Tensor(shape: [2])) }
        #expect(throws: LayerKitError.self) { try Gemm(b: Tensor(shape: [2, 3]), c: Tensor(shape: [2, 2])) }
        #expect(throws: LayerKitError.self) { try Gemm(b: Tensor(shape: [2, 3]), c: Tensor(shape: [1, 1, 3])) }
        #expect(throws: LayerKitError.self) { try Gemm(b: Tensor(shape: [2, 3]), alpha: .nan) }
        let layer = try Gemm(b: Tensor(shape: [2, 3]), c: Tensor(shape: [4, 3]))
        #expect(try layer.outputShapes(forInputShapes: [[4, 2]]) == [[4, 3]])
        for shape in [[4, 3], [2, 4], [4], [4, 2, 1], [5, 2]] {
            #expect(throws: LayerKitError.self, "\(shape)") { try layer.outputShapes(forInputShapes: [shape]) }
        }
        #expect(throws: LayerKitError.self) {
            try layer.evaluate(inputs: [Tensor(shape: [4, 2])], outputs: [Tensor(shape: [4, 2])])
        }
        let transposed = try Gemm(b: Tensor(shape: [3, 2]), transA: true, transB: true)
        #expect(try transposed.outputShapes(forInputShapes: [[2, 5]]) == [[5, 3]])
        #expect(!transposed.hasGPUImplementation)
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func gpuRefusesImagesOfTheWrongShape() throws {
        let context = try TestGPU.get()
        let layer = try Gemm(b: Tensor(shape: [8, 3]))
        let commands = try context.makeCommandBuffer()
        for (input, output) in [([2, 8, 1, 1], [2, 3, 2, 1]), ([2, 8, 1, 2], [2, 3, 1, 1]), ([2, 7, 1, 1], [2, 3, 1, 1])] {
            #expect(throws: LayerKitError.self) {
                try layer.encode(commandBuffer: commands, inputs: [context.makeSliceImage(shape: input)],
                                 outputs: [context.makeSliceImage(shape: output)])
            }
        }
    }
}

/// lk_sgemm_f32 itself, on every instruction set this CPU has.
struct SGEMMTests {
    static let sizes: [(m: Int, n: Int, k: Int)] = [
        (1, 1, 1), (1, 1, 0), (3, 5, 7), (8, 32, 16), (9, 33, 17), (6, 16, 1), (13, 47, 300), (1, 100, 1000),
        // Past a block of LK_MC = 144 rows (and of LK_KC = 256 steps).
        (130, 7, 5), (25, 70, 513), (150, 40, 300),
        // lk_gemv (one or two rows): K past a block of 8 rows of B with rows left, N with a vector tail.
        (2, 37, 21), (1, 300, 19),
    ]

    @Test func everyInstructionSetMatchesDoubles() throws {
        for (index, s) in Self.sizes.enumerated() {
            for transA in [false, true] {
                let seed = UInt64(index * 10 + (transA ? 1 : 0))
                let a = try seededTensor([s.m * s.k], seed: seed)
                let b = try seededTensor([s.k * s.n], seed: seed + 100)
                let rowBias = try seededTensor([s.m], seed: seed + 200)
                let columnBias = try seededTensor([s.n], seed: seed + 300)
                // C sits in a wider matrix (ldc = n + 3) whose extra columns must survive.
                let ldc = s.n + 3
                let start = try seededTensor([s.m * ldc], seed: seed + 400)
                let alpha: Float = 0.75
                for accumulate in [false, true] {
                    var expected: [Double] = []
                    for i in 0..<s.m {
                        for j in 0..<ldc {
                            guard j < s.n else { expected.append(Double(start[i * ldc + j])); continue }
                            var sum = 0.0
                            for p in 0..<s.k {
                                sum += Double(transA ? a[p * s.m + i] : a[i * s.k + p]) * Double(b[p * s.n + j])
                            }
                            expected.append((accumulate ? Double(start[i * ldc + j]) : 0) + Double(rowBias[i])
                                            + Double(columnBias[j]) + Double(alpha) * sum)
                        }
                    }
                    for isa in [LK_ISA_SCALAR, LK_ISA_AVX2_FMA, LK_ISA_AVX512F] where isa.rawValue <= lk_kernels_isa().rawValue {
                        let c = try Tensor(shape: start.shape, values: start.values)
                        let status = lk_sgemm_f32_isa(isa, s.m, s.n, s.k, alpha, a.dataPointer, transA ? 1 : s.k,
                                                      transA ? s.m : 1, b.dataPointer, s.n, c.dataPointer, ldc,
                                                      rowBias.dataPointer, columnBias.dataPointer, accumulate ? 1 : 0)
                        #expect(status == 0)
                        expectClose(c.values, expected, relative: sumTolerance(terms: s.k),
                                    "\(s) transA \(transA) accumulate \(accumulate) \(String(cString: lk_isa_name(isa)))")
                        // B packed once, whole or from the second panel on: the same bits.
                        var panels = [Float](repeating: .nan, count: lk_sgemm_packed_b_size(isa, s.k, s.n))
                        #expect(lk_sgemm_pack_b(isa, s.k, s.n, b.dataPointer, s.n, &panels) == 0)
                        let nr = lk_sgemm_column_block(isa)
                        for j0 in Set([0, min(nr, s.n)]) {
                            let p = try Tensor(shape: start.shape, values: start.values)
                            let fromPanels = panels.withUnsafeBufferPointer { buffer in
                                lk_sgemm_f32_packed_b(isa, s.m, s.n - j0, s.k, alpha, a.dataPointer, transA ? 1 : s.k,
                                                      transA ? s.m : 1, buffer.baseAddress.map { $0 + j0 * s.k },
                                                      p.dataPointer + j0, ldc, rowBias.dataPointer,
                                                      columnBias.dataPointer + j0, accumulate ? 1 : 0)
                            }
                            #expect(fromPanels == 0)
                            let columns = (0..<s.m * ldc).filter { $0 % ldc >= j0 && $0 % ldc < s.n }
                            #expect(columns.map { p[$0] } == columns.map { c[$0] },
                                    "\(s) transA \(transA) packed B from column \(j0) \(String(cString: lk_isa_name(isa)))")
                        }
                    }
                }
            }
        }
    }

    /// One column, A's rows and b and C contiguous: the dot-product path
    /// (attention's scores of one query), K with and without a vector tail.
    @Test func aMatrixTimesAVectorMatchesDoubles() throws {
        for (index, (m, k)) in [(3, 1), (5, 17), (37, 64), (130, 300)].enumerated() {
            let a = try seededTensor([m * k], seed: UInt64(500 + index))
            let b = try seededTensor([k], seed: UInt64(600 + index))
            let start = try seededTensor([m], seed: UInt64(700 + index))
            let (rowBias, columnBias) = (try seededTensor([m], seed: UInt64(800 + index)), try seededTensor([1], seed: 9))
            for accumulate in [false, true] {
                let expected = (0..<m).map { i in
                    (accumulate ? Double(start[i]) : 0) + Double(rowBias[i]) + Double(columnBias[0])
                        + 0.5 * (0..<k).reduce(0.0) { $0 + Double(a[i * k + $1]) * Double(b[$1]) }
                }
                for isa in [LK_ISA_SCALAR, LK_ISA_AVX2_FMA, LK_ISA_AVX512F] where isa.rawValue <= lk_kernels_isa().rawValue {
                    let c = try Tensor(shape: [m], values: start.values)
                    #expect(lk_sgemm_f32_isa(isa, m, 1, k, 0.5, a.dataPointer, k, 1, b.dataPointer, 1, c.dataPointer, 1,
                                             rowBias.dataPointer, columnBias.dataPointer, accumulate ? 1 : 0) == 0)
                    expectClose(c.values, expected, relative: sumTolerance(terms: k),
                                "\(m)x\(k) accumulate \(accumulate) \(String(cString: lk_isa_name(isa)))")
                }
            }
        }
    }

    /// A Gemm's first run of more than two rows packs B' panel by panel, its
    /// second packs B' whole, once (`Gemm.packedB`): every run has the same
    /// bits, and they are the product's within float64's bound.
    @Test func packingOnTheSecondRunKeepsTheBits() throws {
        let (n, k, m) = (5, 300, 130)
        let b = try seededTensor([k, m], seed: 1), c = try seededTensor([m], seed: 2)
        let a = try seededTensor([n, k], seed: 3)
        let gemm = try Gemm(b: b, c: c)
        let runs = try (0..<3).map { _ in
            let y = try Tensor(shape: [n, m])
            try gemm.evaluate(inputs: [a], outputs: [y])
            return y.values
        }
        #expect(runs[1] == runs[0] && runs[2] == runs[0])
        let expected = (0..<n * m).map { index -> Double in
            (0..<k).reduce(Double(c[index % m])) { $0 + Double(a[index / m * k + $1]) * Double(b[$1 * m + index % m]) }
        }
        expectClose(runs[0], expected, relative: sumTolerance(terms: k), "5x130x300")
    }

    /// lk_sgemv_f32_bt on every instruction set: B given as rows (transB),
    /// one or two rows of A (plain and transposed), C inside a wider matrix,
    /// K with and without a vector tail, N past a block of four rows.
    @Test func rowsOfBMatchDoublesOnEveryInstructionSet() throws {
        for (m, n, k) in [(1, 7, 45), (2, 9, 64), (1, 1, 3), (2, 13, 17)] {
            for transA in [false, true] {
                let a = try seededTensor([m * k], seed: 1), bt = try seededTensor([n * k], seed: 2)
                let rowBias = try seededTensor([m], seed: 3), columnBias = try seededTensor([n], seed: 4)
                let ldc = n + 2
                let start = try seededTensor([m * ldc], seed: 5)
                for accumulate in [false, true] {
                    let expected = (0..<m * ldc).map { index -> Double in
                        let (i, j) = index.quotientAndRemainder(dividingBy: ldc)
                        guard j < n else { return Double(start[index]) }
                        let sum = (0..<k).reduce(0.0) {
                            $0 + Double(transA ? a[$1 * m + i] : a[i * k + $1]) * Double(bt[j * k + $1])
                        }
                        return (accumulate ? Double(start[index]) : 0) + Double(rowBias[i]) + Double(columnBias[j])
                            - 1.25 * sum
                    }
                    for isa in [LK_ISA_SCALAR, LK_ISA_AVX2_FMA, LK_ISA_AVX512F] where isa.rawValue <= lk_kernels_isa().rawValue {
                        let c = try Tensor(shape: start.shape, values: start.values)
                        #expect(lk_sgemv_f32_bt(isa, m, n, k, -1.25, a.dataPointer, transA ? 1 : k, transA ? m : 1,
                                                bt.dataPointer, k, c.dataPointer, ldc, rowBias.dataPointer,
                                                columnBias.dataPointer, accumulate ? 1 : 0) == 0)
                        expectClose(c.values, expected, relative: sumTolerance(terms: k),
                                    "\(m)x\(n)x\(k) transA \(transA) accumulate \(accumulate) \(String(cString: lk_isa_name(isa)))")
                    }
                }
            }
        }
    }

    @Test func noBiasesAndNoRows() throws {
        let a = try seededTensor([4 * 3], seed: 1), b = try seededTensor([3 * 5], seed: 2)
        let c = try Tensor(shape: [4 * 5], values: Array(repeating: 9, count: 20))
        #expect(lk_sgemm_f32(0, 5, 3, 1, a.dataPointer, 3, 1, b.dataPointer, 5, c.dataPointer, 5, nil, nil, 0) == 0)
        #expect(c.values.allSatisfy { $0 == 9 })
        #expect(lk_sgemm_f32(4, 5, 3, 1, a.dataPointer, 3, 1, b.dataPointer, 5, c.dataPointer, 5, nil, nil, 0) == 0)
        let expected = (0..<20).map { index -> Double in
            (0..<3).reduce(0.0) { $0 + Double(a[index / 5 * 3 + $1]) * Double(b[$1 * 5 + index % 5]) }
        }
        expectClose(c.values, expected, relative: 1e-6, "4x5x3 without biases")
    }
}
