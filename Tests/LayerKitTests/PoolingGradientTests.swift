import Foundation
import Testing
@testable import LayerKit

/// The pools' backward passes against float64 references written here:
/// naive loops over every window, cell by cell.
struct PoolingGradientTests {
    enum Rule { case max, average(includePad: Bool), lp(Int) }

    /// dLoss/dx of a pool over `x`'s spatial axes (any count) with windows
    /// `axes` (from `Padding.window`), in float64: each window's cells are
    /// visited in row-major kernel order; max sends g to the first strictly
    /// greater cell, average g / count, Lp g * sign(x) * |x|^(p-1) / y^(p-1).
    static func reference(_ x: Tensor, _ g: Tensor, _ rule: Rule, kernel: [Int], strides: [Int], dilations: [Int],
                          axes: [Padding.Axis]) -> [Double] {
        let spatial = Array(x.shape[2...]), output = axes.map(\.output)
        let inPlane = spatial.reduce(1, *), outPlane = output.reduce(1, *)
        var dx = [Double](repeating: 0, count: x.count)
        for plane in 0..<(x.shape[0] * x.shape[1]) {
            for o in 0..<outPlane {
                let oPosition = OpLayerTest.position(o, in: output)
                let go = Double(g[plane * outPlane + o])
                var inside: [Int] = [], padded = 0
                for k in 0..<kernel.reduce(1, *) {
                    let kPosition = OpLayerTest.position(k, in: kernel)
                    let i = spatial.indices.map { oPosition[$0] * strides[$0] - axes[$0].begin + kPosition[$0] * dilations[$0] }
                    if spatial.indices.allSatisfy({ (-axes[$0].begin..<spatial[$0] + axes[$0].end).contains(i[$0]) }) {
                        padded += 1
                    }
                    if spatial.indices.allSatisfy({ (0..<spatial[$0]).contains(i[$0]) }) {
                        inside.append(plane * inPlane + i.indices.reduce(0) { $0 * spatial[$1] + i[$1] })
                    }
                }
                switch rule {
                case .max:
                    var best: Int?
                    for i in inside where best == nil || Double(x[i]) > Double(x[best!]) { best = i }
                    if let best { dx[best] += go }
                case .average(let includePad):
                    let count = includePad ? padded : inside.count
                    for i in inside { dx[i] += go / Double(count) }
                case .lp(let p):
                    let y = pow(inside.reduce(0) { $0 + pow(abs(Double(x[$1])), Double(p)) }, 1 / Double(p))
                    guard y > 0 else { continue }
                    for i in inside {
                        let v = Double(x[i])
                        dx[i] += go * (v > 0 ? 1 : v < 0 ? -1 : 0) * pow(abs(v), Double(p - 1)) / pow(y, Double(p - 1))
                    }
                }
            }
        }
        return dx
    }

    /// Values on a grid of 0.5 in [-2, 2]: windows hold ties.
    static func tiedTensor(_ shape: [Int], seed: UInt64) throws -> Tensor {
        let t = try OpLayerTest.tensor(shape, seed: seed, in: -2...2)
        for i in 0..<t.count { t[i] = (t[i] * 2).rounded() / 2 }
        return t
    }

    /// The 2-D pools: max with pads and stride, ceil mode, dilation and
    /// asymmetric pads, both averages with pads, ceil mode with
    /// count_include_pad (a window past the padded extent), and averages
    /// whose windows do not overlap along the row.
    static func pools() throws -> [Pooling] {
        [
            try Pooling(kind: .max, kernel: [3, 3], strides: [2, 2], padding: .explicit([1, 1, 1, 1])),
            try Pooling(kind: .max, kernel: [2, 2], strides: [2, 2], ceilMode: true),
            try Pooling(kind: .max, kernel: [3, 2], strides: [1, 2], dilations: [2, 1], padding: .explicit([1, 0, 2, 1])),
            try Pooling(kind: .max, kernel: [3, 3], strides: [1, 1], padding: .sameUpper),
            try Pooling(kind: .average(countIncludePad: false), kernel: [3, 3], strides: [2, 2], padding: .explicit([1, 1, 1, 1])),
            try Pooling(kind: .average(countIncludePad: true), kernel: [3, 3], strides: [2, 2], padding: .explicit([1, 1, 1, 1])),
            try Pooling(kind: .average(countIncludePad: true), kernel: [3, 2], strides: [2, 2], dilations: [1, 2],
                        padding: .explicit([1, 0, 1, 1]), ceilMode: true),
            try Pooling(kind: .average(countIncludePad: false), kernel: [2, 3], strides: [3, 2], ceilMode: true),
            // Windows apart along the row (the kernel's row-of-shares path): touching, and with gaps and pads.
            try Pooling(kind: .average(countIncludePad: false), kernel: [2, 2], strides: [2, 2]),
            try Pooling(kind: .average(countIncludePad: true), kernel: [3, 2], strides: [1, 3], padding: .explicit([1, 1, 0, 2]),
                        ceilMode: true),
        ]
    }

    @Test func windowedPoolsMatchTheReference() throws {
        let runner = try cpuRunner()
        for (k, pool) in try Self.pools().enumerated() {
            let x = try Self.tiedTensor([2, 5, 7, 8], seed: UInt64(k))
            let step = try ShapeGradientTest.step(pool, [x], seed: UInt64(k))
            let gradients = try pool.gradients(of: step, on: runner)
            let rule: Rule = switch pool.kind {
            case .max: .max
            case .average(let includePad): .average(includePad: includePad)
            default: .max
            }
            let axes = try (0..<2).map {
                try pool.padding.window(axis: $0, of: 2, input: x.shape[2 + $0], kernel: pool.kernel[$0],
                                        stride: pool.strides[$0], dilation: pool.dilations[$0], ceilMode: pool.ceilMode,
                                        layer: "test")
            }
            let expected = Self.reference(x, step.outputGradients[0]!, rule, kernel: pool.kernel, strides: pool.strides,
                                          dilations: pool.dilations, axes: axes)
            ShapeGradientTest.expectGradient(gradients.inputs[0], expected, shape: x.shape, "\(pool.layerName) #\(k)")
            #expect(gradients.parameters.isEmpty)
        }
        #expect(runner.placements.allSatisfy { !$0.placement.isGPU })
    }

    @Test func oneDimensionalPoolsMatchTheReference() throws {
        let runner = try cpuRunner()
        for (k, kind) in [Pooling.Kind.max, .average(countIncludePad: true)].enumerated() {
            let pool = try Pooling(kind: kind, kernel: [3], strides: [2], padding: .explicit([1, 2]))
            let x = try Self.tiedTensor([2, 3, 9], seed: 40 + UInt64(k))
            let step = try ShapeGradientTest.step(pool, [x], seed: UInt64(k))
            let axes = [try pool.padding.window(axis: 0, of: 2, input: 9, kernel: 3, stride: 2, dilation: 1,
                                                ceilMode: false, layer: "test")]
            let expected = Self.reference(x, step.outputGradients[0]!, k == 0 ? .max : .average(includePad: true),
                                          kernel: [3], strides: [2], dilations: [1], axes: axes)
            ShapeGradientTest.expectGradient(try pool.gradients(of: step, on: runner).inputs[0], expected, shape: x.shape,
                                             "1-D \(pool.layerName)")
        }
    }

    /// A tie goes to the first index in row-major window order.
    @Test func maxTiesGoToTheFirstCell() throws {
        let runner = try cpuRunner()
        // One 2x2 window of equal values, then one whose maximum 3 is at (0, 1) and (1, 0).
        let pool = try Pooling(kind: .max, kernel: [2, 2], strides: [2, 2])
        let x = try Tensor(shape: [1, 2, 2, 2], values: [5, 5, 5, 5, 1, 3, 3, 2])
        let step = GradientStep(inputs: [x], outputs: try OpLayerTest.cpu(pool, [x]),
                                outputGradients: [try Tensor(shape: [1, 2, 1, 1], values: [0.5, -2])],
                                needsInputGradients: [true], parameterRoles: [])
        #expect(try pool.gradients(of: step, on: runner).inputs[0]?.values == [0.5, 0, 0, 0, 0, -2, 0, 0])
        let global = try Pooling(kind: .globalMax)
        let globalStep = GradientStep(inputs: [x], outputs: try OpLayerTest.cpu(global, [x]),
                                      outputGradients: [try Tensor(shape: [1, 2, 1, 1], values: [0.5, -2])],
                                      needsInputGradients: [true], parameterRoles: [])
        #expect(try global.gradients(of: globalStep, on: runner).inputs[0]?.values == [0.5, 0, 0, 0, 0, -2, 0, 0])
    }

    @Test func globalPoolsMatchTheReference() throws {
        let runner = try cpuRunner()
        for shape in [[2, 5, 3, 4], [3, 6, 5], [2, 3, 2, 3, 2]] {
            for kind in [Pooling.Kind.globalAverage, .globalMax] {
                let pool = try Pooling(kind: kind)
                let x = try Self.tiedTensor(shape, seed: UInt64(shape.count))
                let step = try ShapeGradientTest.step(pool, [x], seed: 7)
                let spatial = Array(shape[2...])
                let axes = [Padding.Axis(begin: 0, end: 0, output: 1)]
                let plane = spatial.reduce(1, *)
                let flat = try x.reshaped(to: [shape[0], shape[1], plane])
                let expected = Self.reference(flat, step.outputGradients[0]!, kind == .globalMax ? .max : .average(includePad: false),
                                              kernel: [plane], strides: [1], dilations: [1], axes: axes)
                ShapeGradientTest.expectGradient(try pool.gradients(of: step, on: runner).inputs[0], expected, shape: shape,
                                                 "\(pool.layerName) \(shape)")
            }
        }
    }

    /// GeneralPooling: 3-D max and averages, 1-D Lp and 2-D Lp, and a
    /// MaxPool with Indices (whose second output has no gradient).
    @Test func generalPoolsMatchTheReference() throws {
        let runner = try cpuRunner()
        let cases: [(GeneralPooling, [Int], Rule)] = [
            (try GeneralPooling(kind: .max, kernel: [2, 3, 2], strides: [1, 2, 2], padding: .explicit([0, 1, 1, 1, 1, 0])),
             [2, 3, 4, 5, 4], .max),
            (try GeneralPooling(kind: .average(countIncludePad: true), kernel: [3, 2, 2], strides: [2, 1, 2],
                                padding: .explicit([1, 0, 1, 1, 1, 0]), ceilMode: true), [2, 3, 5, 4, 5], .average(includePad: true)),
            (try GeneralPooling(kind: .average(countIncludePad: false), kernel: [2, 2, 3], dilations: [2, 1, 1],
                                padding: .sameLower), [1, 5, 5, 3, 4], .average(includePad: false)),
            (try GeneralPooling(kind: .lpNorm(p: 2), kernel: [3], strides: [2], padding: .explicit([1, 1])), [2, 3, 9], .lp(2)),
            (try GeneralPooling(kind: .lpNorm(p: 3), kernel: [2, 2], strides: [1, 2]), [2, 5, 4, 5], .lp(3)),
            (try GeneralPooling(kind: .lpNorm(p: 1), kernel: [2, 2]), [1, 3, 3, 3], .lp(1)),
            (try GeneralPooling(kind: .max, kernel: [3, 3], strides: [2, 2], padding: .explicit([1, 1, 1, 1]),
                                outputsIndices: true), [2, 5, 6, 7], .max),
        ]
        for (k, (pool, shape, rule)) in cases.enumerated() {
            let x = try Self.tiedTensor(shape, seed: 20 + UInt64(k))
            let step = try ShapeGradientTest.step(pool, [x], seed: UInt64(k))
            let expected = Self.reference(x, step.outputGradients[0]!, rule, kernel: pool.kernel, strides: pool.strides,
                                          dilations: pool.dilations, axes: try pool.windows(shape))
            ShapeGradientTest.expectGradient(try pool.gradients(of: step, on: runner).inputs[0], expected, shape: shape,
                                             "\(pool.layerName) #\(k)")
        }
    }

    /// GlobalAveragePool's backward is a broadcast product, on the GPU:
    /// within the parity rule of the CPU's on fp16-rounded gradients, the
    /// same bits twice.
    @Test(.enabled(if: TestGPU.isEnabled)) func globalAverageRunsOnTheGPU() throws {
        let pool = try Pooling(kind: .globalAverage)
        let x = try OpLayerTest.tensor([2, 7, 5, 6], seed: 3, half: true)
        let step = try ShapeGradientTest.step(pool, [x], seed: 4, half: true)
        let gpu = try gpuRunner()
        let first = try pool.gradients(of: step, on: gpu).inputs
        let second = try pool.gradients(of: step, on: gpu).inputs
        #expect(gpu.placements.map(\.placement) == [.gpu])
        let cpu = try pool.gradients(of: step, on: cpuRunner()).inputs
        ShapeGradientTest.expectParity(first, cpu, "GlobalAveragePool")
        ShapeGradientTest.expectSameBits(first, second, "GlobalAveragePool")
        // The windowed pools' backward is CPU work, reported as such.
        let max = try Pooling(kind: .max, kernel: [2, 2], strides: [2, 2])
        _ = try max.gradients(of: ShapeGradientTest.step(max, [x], seed: 5), on: gpu)
        #expect(gpu.placements.last?.placement == .cpu(reason: "MaxPool backward has no GPU kernel"))
    }

    @Test func badGradientsAreErrors() throws {
        let runner = try cpuRunner()
        let pool = try Pooling(kind: .max, kernel: [2, 2], strides: [2, 2])
        let x = try OpLayerTest.tensor([2, 3, 4, 4], seed: 1)
        let good = try ShapeGradientTest.step(pool, [x], seed: 1)
        let wrong = GradientStep(inputs: good.inputs, outputs: good.outputs,
                                 outputGradients: [try Tensor(shape: [2, 3, 4, 4])],
                                 needsInputGradients: [true], parameterRoles: [])
        #expect {
            try pool.gradients(of: wrong, on: runner)
        } throws: { error in
            "\(error)".contains("MaxPool backward: the gradient of output 0 is 2x3x4x4; the output is 2x3x2x2")
        }
        let noInput = GradientStep(inputs: [], outputs: good.outputs, outputGradients: good.outputGradients,
                                   needsInputGradients: [], parameterRoles: [])
        #expect(throws: LayerKitError.self) { try pool.gradients(of: noInput, on: runner) }
        #expect(throws: LayerKitError.self) { try pool.replacingParameters(["weights": x]) }
        #expect(try pool.replacingParameters([:]) === pool)
        #expect(pool.trainableParameters.isEmpty)
        // No gradient for the output: zero for the input.
        let none = GradientStep(inputs: [x], outputs: good.outputs, outputGradients: [nil],
                                needsInputGradients: [true], parameterRoles: [])
        #expect(try pool.gradients(of: none, on: runner).inputs[0]?.values.allSatisfy { $0 == 0 } == true)
    }
}
