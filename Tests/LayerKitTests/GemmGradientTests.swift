import Foundation
import Testing
@testable import LayerKit

/// Gemm's and MatMul's backward passes against naive float64 loops.
struct GemmGradientTests {
    static let (n, k, m) = (5, 7, 6)

    /// One Gemm form: transA, transB, alpha, beta and C's shape (nil: no C).
    struct Case: CustomStringConvertible, Sendable {
        var transA: Bool, transB: Bool, alpha: Float, beta: Float, c: [Int]?
        var description: String { "transA \(transA) transB \(transB) alpha \(alpha) beta \(beta) C \(c.map { "\($0)" } ?? "none")" }
        var aShape: [Int] { transA ? [GemmGradientTests.k, GemmGradientTests.n] : [GemmGradientTests.n, GemmGradientTests.k] }
        var bShape: [Int] { transB ? [GemmGradientTests.m, GemmGradientTests.k] : [GemmGradientTests.k, GemmGradientTests.m] }
    }

    static let cases: [Case] = [false, true].flatMap { transA in
        [false, true].flatMap { transB in
            [nil, [n, m], [m], [1], [n, 1]].map { c in Case(transA: transA, transB: transB, alpha: 0.7, beta: 1.3, c: c) }
        }
    } + [Case(transA: false, transB: false, alpha: 1, beta: 1, c: [1, m])]

    /// dA, dB, dC of `Y = alpha A' B' + beta C` by float64 loops, each in its operand's layout.
    static func reference(_ c: Case, a: Tensor, b: Tensor, dy: Tensor) -> (da: [Double], db: [Double], dc: [Double]) {
        let (n, k, m) = (Self.n, Self.k, Self.m)
        let aIndex = { (i: Int, p: Int) in c.transA ? p * n + i : i * k + p }
        let bIndex = { (p: Int, j: Int) in c.transB ? j * k + p : p * m + j }
        var da = [Double](repeating: 0, count: n * k), db = [Double](repeating: 0, count: k * m)
        let cShape = c.c.map { Array(repeating: 1, count: 2 - $0.count) + $0 } ?? [1, 1]
        var dc = [Double](repeating: 0, count: cShape[0] * cShape[1])
        for i in 0..<n {
            for j in 0..<m {
                let g = Double(dy[i * m + j])
                for p in 0..<k {
                    da[aIndex(i, p)] += Double(c.alpha) * g * Double(b[bIndex(p, j)])
                    db[bIndex(p, j)] += Double(c.alpha) * g * Double(a[aIndex(i, p)])
                }
                dc[(cShape[0] == 1 ? 0 : i) * cShape[1] + (cShape[1] == 1 ? 0 : j)] += Double(c.beta) * g
            }
        }
        return (da, db, dc)
    }

    static func operands(_ c: Case, seed: UInt64, half: Bool = false) throws -> (Tensor, Tensor, Tensor?) {
        (try OpLayerTest.tensor(c.aShape, seed: seed, in: -2...2, half: half),
         try OpLayerTest.tensor(c.bShape, seed: seed + 1, in: -1...1, half: half),
         try c.c.map { try OpLayerTest.tensor($0, seed: seed + 2, in: -1...1, half: half) })
    }

    @Test(arguments: cases)
    func gemmLayerGradientsMatchTheFloat64Loops(c: Case) throws {
        let (a, b, cTensor) = try Self.operands(c, seed: 61)
        let layer = try Gemm(b: b, c: cTensor, alpha: c.alpha, beta: c.beta, transA: c.transA, transB: c.transB)
        #expect(layer.trainableParameters.map(\.role) == ["B"] + (c.c == nil ? [] : ["C"]))
        #expect(layer.trainableParameters.map(\.nodeInput) == [1] + (c.c == nil ? [] : [2]))
        let step = try DenseGradientTest.step(layer, [a], seed: 62, roles: ["B", "C"])
        let gradients = try layer.gradients(of: step, on: cpuRunner())
        let expected = Self.reference(c, a: a, b: b, dy: step.outputGradients[0]!)
        DenseGradientTest.expect(gradients.inputs[0], expected.da, shape: c.aShape, "\(c) dA")
        DenseGradientTest.expect(gradients.parameters["B"], expected.db, shape: c.bShape, "\(c) dB")
        if let shape = c.c {
            DenseGradientTest.expect(gradients.parameters["C"], expected.dc, shape: shape, "\(c) dC")
        }
    }

    @Test(arguments: cases)
    func matMulLayerGemmGradientsMatchTheFloat64Loops(c: Case) throws {
        let (a, b, cTensor) = try Self.operands(c, seed: 71)
        let layer = try MatMulLayer(transA: c.transA, transB: c.transB, alpha: c.alpha, beta: c.beta, hasC: cTensor != nil)
        #expect(layer.trainableParameters.isEmpty)
        let step = try DenseGradientTest.step(layer, [a, b] + (cTensor.map { [$0] } ?? []), seed: 72, roles: [])
        let gradients = try layer.gradients(of: step, on: cpuRunner())
        let expected = Self.reference(c, a: a, b: b, dy: step.outputGradients[0]!)
        DenseGradientTest.expect(gradients.inputs[0], expected.da, shape: c.aShape, "\(c) dA")
        DenseGradientTest.expect(gradients.inputs[1], expected.db, shape: c.bShape, "\(c) dB")
        if let shape = c.c {
            DenseGradientTest.expect(gradients.inputs[2], expected.dc, shape: shape, "\(c) dC")
        }
    }

    /// numpy matmul shapes: broadcast batch axes, 1-D operands.
    static let matMulShapes: [([Int], [Int])] = [
        ([2, 1, 3, 4], [3, 4, 5]), ([4], [2, 4, 5]), ([2, 3, 4], [4]), ([3, 4], [2, 4, 5]), ([5, 2, 3], [5, 3, 2]), ([4], [4]),
    ]

    /// dA, dB of numpy's matmul by float64 loops over the broadcast batch.
    static func matMulReference(_ a: Tensor, _ b: Tensor, dy: Tensor) -> ([Double], [Double]) {
        let pa = a.shape.count == 1 ? [1, a.shape[0]] : a.shape, pb = b.shape.count == 1 ? [b.shape[0], 1] : b.shape
        let (m, k, n) = (pa[pa.count - 2], pa[pa.count - 1], pb[pb.count - 1])
        let rank = max(pa.count, pb.count) - 2
        let ba = Array(repeating: 1, count: rank - (pa.count - 2)) + pa.dropLast(2)
        let bb = Array(repeating: 1, count: rank - (pb.count - 2)) + pb.dropLast(2)
        let batch = zip(ba, bb).map { max($0, $1) }
        var da = [Double](repeating: 0, count: a.count), db = [Double](repeating: 0, count: b.count)
        for index in 0..<batch.reduce(1, *) {
            var rest = index, aMatrix = 0, bMatrix = 0, aScale = 1, bScale = 1
            for axis in (0..<rank).reversed() {
                let position = rest % batch[axis]
                rest /= batch[axis]
                aMatrix += (ba[axis] == 1 ? 0 : position) * aScale
                bMatrix += (bb[axis] == 1 ? 0 : position) * bScale
                aScale *= ba[axis]
                bScale *= bb[axis]
            }
            for i in 0..<m {
                for j in 0..<n {
                    let g = Double(dy[(index * m + i) * n + j])
                    for p in 0..<k {
                        da[aMatrix * m * k + i * k + p] += g * Double(b[bMatrix * k * n + p * n + j])
                        db[bMatrix * k * n + p * n + j] += g * Double(a[aMatrix * m * k + i * k + p])
                    }
                }
            }
        }
        return (da, db)
    }

    @Test func batchedMatMulGradientsSumTheBroadcastAxes() throws {
        for (index, (aShape, bShape)) in Self.matMulShapes.enumerated() {
            let a = try OpLayerTest.tensor(aShape, seed: UInt64(80 + index), in: -2...2)
            let b = try OpLayerTest.tensor(bShape, seed: UInt64(90 + index), in: -1...1)
            let step = try DenseGradientTest.step(MatMulLayer(), [a, b], seed: 99, roles: [])
            let gradients = try MatMulLayer().gradients(of: step, on: cpuRunner())
            let (da, db) = Self.matMulReference(a, b, dy: step.outputGradients[0]!)
            DenseGradientTest.expect(gradients.inputs[0], da, shape: aShape, "\(aShape) x \(bShape) dA")
            DenseGradientTest.expect(gradients.inputs[1], db, shape: bShape, "\(aShape) x \(bShape) dB")
        }
    }

    @Test func matMulWithAConstantBIsTheGemmLayerWithRoleB() throws {
        let c = Case(transA: false, transB: false, alpha: 1, beta: 0, c: nil)
        let (a, b, _) = try Self.operands(c, seed: 101)
        let layer = try Gemm(b: b, name: "MatMul")
        let step = try DenseGradientTest.step(layer, [a], seed: 102, roles: ["B"])
        let gradients = try layer.gradients(of: step, on: cpuRunner())
        let expected = Self.reference(c, a: a, b: b, dy: step.outputGradients[0]!)
        DenseGradientTest.expect(gradients.inputs[0], expected.da, shape: c.aShape, "MatMul dA")
        DenseGradientTest.expect(gradients.parameters["B"], expected.db, shape: c.bShape, "MatMul dB")
        let newB = try OpLayerTest.tensor([Self.k, Self.m], seed: 103)
        let replaced = try #require(try layer.replacingParameters(["B": newB]) as? Gemm)
        #expect(replaced.layerName == "MatMul" && replaced.trainableParameters[0].value.values == newB.values)
        #expect(try OpLayerTest.cpu(replaced, [a])[0].values == OpLayerTest.cpu(Gemm(b: newB, name: "MatMul"), [a])[0].values)
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func gpuInputGradientMatchesTheCPU() throws {
        for c in [Case(transA: false, transB: true, alpha: 0.7, beta: 1.3, c: [Self.m]),
                  Case(transA: true, transB: false, alpha: 1, beta: 1, c: [Self.n, Self.m])] {
            let (a, b, cTensor) = try Self.operands(c, seed: 111, half: true)
            let layer = try Gemm(b: b, c: cTensor, alpha: c.alpha, beta: c.beta, transA: c.transA, transB: c.transB)
            let step = try DenseGradientTest.step(layer, [a], seed: 112, roles: [], half: true)
            let gpu = try gpuRunner()
            let onGPU = try layer.gradients(of: step, on: gpu)
            let onCPU = try layer.gradients(of: step, on: cpuRunner())
            DenseGradientTest.expectParity(onGPU.inputs[0], onCPU.inputs[0], "\(c) dA")
            #expect(gpu.placements.first?.placement == .gpu, "\(gpu.placements)")
        }
    }

    @Test func badGradientsAndParametersThrow() throws {
        let c = Self.cases[1]
        let (a, b, cTensor) = try Self.operands(c, seed: 121)
        let layer = try Gemm(b: b, c: cTensor, alpha: c.alpha, beta: c.beta)
        let good = try DenseGradientTest.step(layer, [a], seed: 122, roles: ["B"])
        let wrong = GradientStep(inputs: good.inputs, outputs: good.outputs, outputGradients: [try Tensor(shape: [Self.m, Self.n])],
                                 needsInputGradients: [true], parameterRoles: ["B"])
        #expect(throws: LayerKitError.self) { try layer.gradients(of: wrong, on: cpuRunner()) }
        let matMul = MatMulLayer()
        let step = try DenseGradientTest.step(matMul, [a, b], seed: 123, roles: [])
        let misshapen = GradientStep(inputs: step.inputs, outputs: step.outputs, outputGradients: [try Tensor(shape: [Self.n])],
                                     needsInputGradients: [true, true], parameterRoles: [])
        #expect(throws: LayerKitError.self) { try matMul.gradients(of: misshapen, on: cpuRunner()) }
        #expect(throws: LayerKitError.self) { try layer.replacingParameters(["B": try Tensor(shape: [Self.m, Self.k])]) }
        #expect(throws: LayerKitError.self) { try matMul.replacingParameters(["B": b]) }
    }
}
