import Foundation
import Testing
@testable import LayerKit

/// Conv's backward pass against naive float64 loops of the backward math.
struct ConvolutionGradientTests {
    /// One geometry; 1-D when `input` has rank 3.
    struct Case: CustomStringConvertible {
        var description: String
        var input: [Int]
        var weights: [Int]
        var bias = true
        var strides = [1, 1]
        var dilations = [1, 1]
        var padding = Padding.explicit([0, 0, 0, 0])
        var group = 1
    }

    static let cases: [Case] = [
        Case(description: "stride 2, uneven pads", input: [2, 3, 9, 8], weights: [4, 3, 3, 3], strides: [2, 2],
             padding: .explicit([1, 0, 2, 1])),
        Case(description: "dilation 2", input: [2, 3, 9, 9], weights: [5, 3, 3, 2], strides: [1, 2], dilations: [2, 2],
             padding: .explicit([2, 1, 2, 1])),
        Case(description: "groups 2", input: [2, 4, 7, 7], weights: [6, 2, 3, 3], strides: [2, 1],
             padding: .explicit([1, 1, 1, 1]), group: 2),
        Case(description: "depthwise, SAME_UPPER stride 2", input: [2, 4, 8, 8], weights: [4, 1, 3, 3], strides: [2, 2],
             padding: .sameUpper, group: 4),
        Case(description: "depthwise multiplier 2, SAME_LOWER", input: [1, 3, 6, 6], weights: [6, 1, 3, 3],
             padding: .sameLower, group: 3),
        Case(description: "1-D stride 2 dilation 2", input: [2, 3, 11], weights: [4, 3, 3], strides: [2], dilations: [2],
             padding: .explicit([1, 2])),
        Case(description: "no bias, input cells past the last window", input: [2, 3, 8, 8], weights: [4, 3, 3, 3],
             bias: false, strides: [2, 2]),
        Case(description: "1x1 stride 3, no bias", input: [2, 5, 8, 7], weights: [3, 5, 1, 1], bias: false, strides: [3, 3]),
        // Stride 1: the flipped convolution (Winograd's path for the first).
        Case(description: "3x3 stride 1, 32 channels", input: [2, 32, 8, 8], weights: [32, 32, 3, 3],
             padding: .explicit([1, 1, 1, 1])),
        Case(description: "stride 1 dilation 2, uneven pads, groups 2", input: [2, 4, 9, 8], weights: [6, 2, 3, 2],
             dilations: [2, 2], padding: .explicit([2, 0, 1, 1]), group: 2),
        Case(description: "1-D stride 1 dilation 3", input: [2, 3, 12], weights: [4, 3, 3], dilations: [3],
             padding: .explicit([3, 6])),
        Case(description: "stride 1, pad wider than the kernel", input: [1, 2, 5, 5], weights: [3, 2, 2, 2],
             padding: .explicit([2, 0, 0, 2])),
        Case(description: "1x1 stride 1", input: [2, 8, 5, 6], weights: [4, 8, 1, 1]),
    ]

    /// The layer and its seeded input, weights (and bias), fp16-rounded with `half`.
    static func make(_ c: Case, seed: UInt64, half: Bool = false) throws -> (Convolution, Tensor) {
        let weights = try OpLayerTest.tensor(c.weights, seed: seed, in: -1...1, half: half)
        let bias = c.bias ? try OpLayerTest.tensor([c.weights[0]], seed: seed + 1, in: -1...1, half: half) : nil
        let layer = try Convolution(weights: weights, bias: bias, strides: c.strides, dilations: c.dilations,
                                    padding: c.padding, group: c.group)
        return (layer, try OpLayerTest.tensor(c.input, seed: seed + 2, in: -2...2, half: half))
    }

    /// The leading pad and output extent of one axis, resolved as ONNX does.
    static func axis(_ c: Case, _ a: Int, input: Int, kernel: Int) -> (pad: Int, output: Int) {
        let (s, extent) = (c.strides.count > a ? c.strides[a] : 1,
                           ((kernel - 1) * (c.dilations.count > a ? c.dilations[a] : 1)) + 1)
        switch c.padding {
        case .explicit(let pads):
            let rank = pads.count / 2
            let (begin, end) = a < rank ? (pads[a], pads[rank + a]) : (0, 0)
            return (begin, (input + begin + end - extent) / s + 1)
        case .sameUpper, .sameLower:
            let output = (input + s - 1) / s
            let total = max(0, (output - 1) * s + extent - input)
            return (c.padding == .sameUpper ? total / 2 : total - total / 2, output)
        case .valid:
            return (0, (input - extent) / s + 1)
        }
    }

    /// dL/dx, dL/dw, dL/db by one float64 loop over every (image, output
    /// channel, output cell, input channel of its group, tap).
    static func reference(_ c: Case, x: Tensor, w: Tensor, dy: Tensor) -> (dx: [Double], dw: [Double], db: [Double]) {
        let (n, channels, h) = (c.input[0], c.input[1], c.input[2])
        let wd = c.input.count == 4 ? c.input[3] : 1
        let (m, cg, kh) = (c.weights[0], c.weights[1], c.weights[2])
        let kw = c.weights.count == 4 ? c.weights[3] : 1
        let rows = axis(c, 0, input: h, kernel: kh), cols = axis(c, 1, input: wd, kernel: kw)
        let (sh, sw) = (c.strides[0], c.strides.count > 1 ? c.strides[1] : 1)
        let (dh, dw) = (c.dilations[0], c.dilations.count > 1 ? c.dilations[1] : 1)
        let mg = m / c.group
        var dx = [Double](repeating: 0, count: x.count), gw = [Double](repeating: 0, count: w.count)
        var db = [Double](repeating: 0, count: m)
        for b in 0..<n {
            for o in 0..<m {
                for oh in 0..<rows.output {
                    for ow in 0..<cols.output {
                        let g = Double(dy[((b * m + o) * rows.output + oh) * cols.output + ow])
                        db[o] += g
                        for ci in 0..<cg {
                            let ch = o / mg * cg + ci
                            for th in 0..<kh {
                                for tw in 0..<kw {
                                    let ih = oh * sh - rows.pad + th * dh, iw = ow * sw - cols.pad + tw * dw
                                    guard ih >= 0, ih < h, iw >= 0, iw < wd else { continue }
                                    let xi = ((b * channels + ch) * h + ih) * wd + iw
                                    let wi = ((o * cg + ci) * kh + th) * kw + tw
                                    dx[xi] += g * Double(w[wi])
                                    gw[wi] += g * Double(x[xi])
                                }
                            }
                        }
                    }
                }
            }
        }
        return (dx, gw, db)
    }

    @Test(arguments: cases)
    func cpuGradientsMatchTheFloat64Loops(c: Case) throws {
        let (layer, x) = try Self.make(c, seed: 11)
        let roles: Set<String> = c.bias ? ["weights", "bias"] : ["weights"]
        let step = try DenseGradientTest.step(layer, [x], seed: 12, roles: roles)
        let runner = try cpuRunner()
        let gradients = try layer.gradients(of: step, on: runner)
        let w = layer.trainableParameters[0].value
        #expect(w.shape == c.weights)
        let expected = Self.reference(c, x: x, w: w, dy: step.outputGradients[0]!)
        DenseGradientTest.expect(gradients.inputs[0], expected.dx, shape: c.input, "\(c) dx")
        DenseGradientTest.expect(gradients.parameters["weights"], expected.dw, shape: c.weights, "\(c) dw")
        if c.bias {
            DenseGradientTest.expect(gradients.parameters["bias"], expected.db, shape: [c.weights[0]], "\(c) db")
        } else {
            #expect(gradients.parameters["bias"] == nil)
        }
        let flipped = c.strides.allSatisfy { $0 == 1 } && c.description != "stride 1, pad wider than the kernel"
        #expect(runner.placements.map(\.work).contains(flipped ? "Conv" : "ConvTranspose"), "\(runner.placements)")
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: cases)
    func gpuInputGradientMatchesTheCPU(c: Case) throws {
        let (layer, x) = try Self.make(c, seed: 21, half: true)
        let step = try DenseGradientTest.step(layer, [x], seed: 22, roles: [], half: true)
        let gpu = try gpuRunner()
        let onGPU = try layer.gradients(of: step, on: gpu)
        let onCPU = try layer.gradients(of: step, on: cpuRunner())
        DenseGradientTest.expectParity(onGPU.inputs[0], onCPU.inputs[0], "\(c) dx")
        #expect(gpu.placements.map(\.placement) == [.gpu], "\(c): \(gpu.placements)")
    }

    /// dL/dw has the same bits on one thread and on four (the matrix-product
    /// path and the depthwise one, each with enough work to split), and with
    /// dL/dy packed a few images at a time.
    @Test func weightGradientDoesNotDependOnTheThreadCount() throws {
        let cases = [
            Case(description: "3x3, 8 -> 16", input: [3, 8, 32, 32], weights: [16, 8, 3, 3],
                 padding: .explicit([1, 1, 1, 1])),
            Case(description: "depthwise", input: [8, 64, 16, 16], weights: [64, 1, 3, 3],
                 padding: .explicit([1, 1, 1, 1]), group: 64),
        ]
        for c in cases {
            let (layer, x) = try Self.make(c, seed: 61)
            let g = try layer.geometry(forInputShape: x.shape)
            let dy = try OpLayerTest.tensor([x.shape[0], c.weights[0], g.outHeight, g.outWidth], seed: 62, in: -1...1)
            layer.threadCount = 1
            let one = try layer.weightGradient(input: x, outputGradient: dy, geometry: g)
            layer.threadCount = 4
            let four = try layer.weightGradient(input: x, outputGradient: dy, geometry: g)
            let spans = try layer.weightGradient(input: x, outputGradient: dy, geometry: g, columnBudget: 1)
            #expect(one.values == four.values, "\(c)")
            #expect(one.values == spans.values, "\(c)")
        }
    }

    @Test func onlyWhatIsAskedForIsComputed() throws {
        let (layer, x) = try Self.make(Self.cases[0], seed: 31)
        let step = try DenseGradientTest.step(layer, [x], seed: 32, roles: ["bias"], needs: [false])
        let gradients = try layer.gradients(of: step, on: cpuRunner())
        #expect(gradients.inputs.count == 1 && gradients.inputs[0] == nil)
        #expect(Set(gradients.parameters.keys) == ["bias"])
    }

    @Test func replacingParametersKeepsTheGeometry() throws {
        for c in [Self.cases[1], Self.cases[5]] {
            let (layer, x) = try Self.make(c, seed: 41)
            let weights = try OpLayerTest.tensor(c.weights, seed: 42, in: -1...1)
            let replaced = try #require(try layer.replacingParameters(["weights": weights]) as? Convolution)
            let fresh = try Convolution(weights: weights, bias: layer.bias, strides: c.strides, dilations: c.dilations,
                                        padding: c.padding, group: c.group)
            #expect(try OpLayerTest.cpu(replaced, [x])[0].values == OpLayerTest.cpu(fresh, [x])[0].values)
            #expect(replaced.trainableParameters.map(\.role) == ["weights", "bias"])
            #expect(replaced.trainableParameters.map(\.nodeInput) == [1, 2])
        }
    }

    @Test func badGradientsAndParametersThrow() throws {
        let c = Self.cases[0]
        let (layer, x) = try Self.make(c, seed: 51)
        let good = try DenseGradientTest.step(layer, [x], seed: 52, roles: ["weights"])
        let wrong = GradientStep(inputs: good.inputs, outputs: good.outputs, outputGradients: [try Tensor(shape: [2, 4, 5])],
                                 needsInputGradients: [true], parameterRoles: ["weights"])
        #expect(throws: LayerKitError.self) { try layer.gradients(of: wrong, on: cpuRunner()) }
        do {
            _ = try layer.gradients(of: wrong, on: cpuRunner())
        } catch let error as LayerKitError {
            #expect("\(error)".contains("must have that shape"), "\(error)")
        }
        #expect(throws: LayerKitError.self) { try layer.replacingParameters(["weights": try Tensor(shape: [4, 3, 3])]) }
        #expect(throws: LayerKitError.self) { try layer.replacingParameters(["kernel": try Tensor(shape: [4, 3, 3, 3])]) }
        let (unbiased, _) = try Self.make(Self.cases[6], seed: 53)
        #expect(throws: LayerKitError.self) { try unbiased.replacingParameters(["bias": try Tensor(shape: [4])]) }
    }
}
