import Foundation
import Testing
@testable import LayerKit

/// The backward passes of the broadcasting binary ops, Softmax and
/// LogSoftmax, and the element-moving layers against float64 references
/// written here, and on the GPU against the CPU.
struct ShapeGradientTests {
    // MARK: - Binary ops with broadcasting

    /// Operand shapes: a per-channel [3, 1, 1] and a [1, 5] row against
    /// [2, 3, 4, 5], a scalar (rank 0), both operands broadcasting, same
    /// shapes, a bias of 6 channels, rank 1; a lower rank first too.
    static let shapePairs: [([Int], [Int])] = [
        ([2, 3, 4, 5], [3, 1, 1]), ([2, 3, 4, 5], [1, 5]), ([2, 3, 4, 5], []), ([3, 1, 1], [2, 3, 4, 5]),
        ([2, 1, 4, 1], [1, 3, 1, 5]), ([2, 3, 4, 5], [2, 3, 4, 5]), ([2, 6, 3, 3], [1, 6, 1, 1]), ([2, 5], [1, 5]),
        ([5], [1]), ([2, 6, 3, 3], [2, 6, 1, 1]), ([2, 6, 3, 3], [2, 1, 3, 3]),
    ]

    /// The inputs' gradients of `operation` folded over `inputs` (`average`:
    /// Mean) in float64: each output element adds g times its local
    /// derivative to the input element it read; Max and Min send g to the
    /// first input holding the result. `round` is applied where the GPU's
    /// steps store a value (the products, quotients and sums): the identity
    /// for the reference, fp16 rounding for the GPU's fp16 twin.
    static func reference(_ operation: BinaryLayer.Operation, average: Bool = false, _ inputs: [Tensor],
                          _ g: Tensor, round: (Double) -> Double = { $0 }) -> [[Double]] {
        var gradients = inputs.map { [Double](repeating: 0, count: $0.count) }
        for o in 0..<g.count {
            let position = OpLayerTest.position(o, in: g.shape)
            let at = inputs.map { ShapeGradientTest.broadcastIndex(position, in: $0.shape) }
            let v = zip(inputs, at).map { Double($0[$1]) }
            let go = Double(g[o])
            func add(_ k: Int, _ share: Double) { gradients[k][at[k]] += share }
            switch operation {
            case .add:
                let share = average ? round(go * round(1 / Double(inputs.count))) : go
                for k in inputs.indices { add(k, share) }
            case .sub: add(0, go); add(1, -go)
            case .mul: add(0, round(go * v[1])); add(1, round(go * v[0]))
            case .div:
                let share = round(go / v[1])
                add(0, share); add(1, -round(share * round(v[0] / v[1])))
            case .max, .min:
                let extreme = operation == .max ? v.max()! : v.min()!
                add(v.firstIndex(of: extreme)!, go)
            default: break
            }
        }
        return gradients.map { $0.map(round) }
    }

    static func operands(_ shapes: [[Int]], seed: UInt64, tied: Bool, half: Bool = false) throws -> [Tensor] {
        try shapes.enumerated().map { k, shape in
            let t = try OpLayerTest.tensor(shape, seed: seed &+ UInt64(k), in: k == 1 && !tied ? 0.5...2 : -2...2, half: half)
            if tied { for i in 0..<t.count { t[i] = (t[i] * 2).rounded() / 2 } }
            return t
        }
    }

    @Test(arguments: [BinaryLayer.Operation.add, .sub, .mul, .div, .max, .min])
    func binaryOpsMatchTheReference(operation: BinaryLayer.Operation) throws {
        let runner = try cpuRunner()
        let layer = BinaryLayer(operation)
        for (k, (a, b)) in Self.shapePairs.enumerated() {
            let inputs = try Self.operands([a, b], seed: UInt64(10 * k), tied: operation == .max || operation == .min)
            let step = try ShapeGradientTest.step(layer, inputs, seed: UInt64(k))
            let gradients = try layer.gradients(of: step, on: runner)
            let expected = Self.reference(operation, inputs, step.outputGradients[0]!)
            for i in 0..<2 {
                ShapeGradientTest.expectGradient(gradients.inputs[i], expected[i], shape: inputs[i].shape,
                                                 "\(layer.layerName) \(a) \(b) input \(i)")
            }
        }
    }

    @Test func variadicOpsMatchTheReference() throws {
        let runner = try cpuRunner()
        let shapes = [[2, 3, 4, 5], [3, 1, 1], [1, 5]]
        let layers = [
            (try BinaryLayer(.add, inputCount: 3, name: "Sum"), false),
            (try BinaryLayer(.add, inputCount: 3, average: true, name: "Mean"), true),
            (try BinaryLayer(.max, inputCount: 3, name: "Max"), false),
            (try BinaryLayer(.min, inputCount: 3, name: "Min"), false),
        ]
        for (layer, average) in layers {
            let inputs = try Self.operands(shapes, seed: 3, tied: true)
            let step = try ShapeGradientTest.step(layer, inputs, seed: 4)
            let gradients = try layer.gradients(of: step, on: runner)
            let expected = Self.reference(layer.operation, average: average, inputs, step.outputGradients[0]!)
            for i in 0..<3 {
                ShapeGradientTest.expectGradient(gradients.inputs[i], expected[i], shape: shapes[i], "\(layer.layerName) input \(i)")
            }
        }
        // One input: the gradient itself.
        let one = try BinaryLayer(.max, inputCount: 1, name: "Max")
        let step = try ShapeGradientTest.step(one, try Self.operands([[2, 3]], seed: 1, tied: false), seed: 2)
        #expect(try one.gradients(of: step, on: runner).inputs[0]?.values == step.outputGradients[0]!.values)
    }

    /// A tie sends the gradient to the first input.
    @Test func maxAndMinTiesGoToTheFirstInput() throws {
        let runner = try cpuRunner()
        let a = try Tensor(shape: [4], values: [1, 2, 3, 3]), b = try Tensor(shape: [4], values: [1, 5, 0, 3])
        let c = try Tensor(shape: [4], values: [1, 5, 3, 2])
        let g = try Tensor(shape: [4], values: [1, 2, 3, 4])
        for (operation, expected) in [(BinaryLayer.Operation.max, [[1, 0, 3, 4], [0, 2, 0, 0], [0, 0, 0, 0]] as [[Float]]),
                                      (.min, [[1, 2, 0, 0], [0, 0, 3, 0], [0, 0, 0, 4]])] {
            let layer = try BinaryLayer(operation, inputCount: 3, name: operation.onnxName)
            let step = GradientStep(inputs: [a, b, c], outputs: try OpLayerTest.cpu(layer, [a, b, c]), outputGradients: [g],
                                    needsInputGradients: [true, true, true], parameterRoles: [])
            #expect(try layer.gradients(of: step, on: runner).inputs.map { $0?.values } == expected)
        }
    }

    /// The same steps on the GPU (fp16-rounded operands and gradients): the
    /// same bits twice, the products and masks placed on the GPU; Add, Sub
    /// and Max (g, masked, summed once) within the parity rule of the CPU's,
    /// Mul and Div (a product stored in fp16, then summed) within
    /// max(1e-3, 2 x the fp16 twin's error).
    @Test(.enabled(if: TestGPU.isEnabled), arguments: [BinaryLayer.Operation.add, .sub, .mul, .div, .max])
    func binaryOpsOnTheGPUMatchTheCPU(operation: BinaryLayer.Operation) throws {
        let gpu = try gpuRunner(), cpu = try cpuRunner()
        let layer = BinaryLayer(operation)
        for (k, (a, b)) in Self.shapePairs.enumerated() {
            let inputs = try Self.operands([a, b], seed: UInt64(10 * k), tied: operation == .max, half: true)
            let step = try ShapeGradientTest.step(layer, inputs, seed: UInt64(k), half: true)
            let first = try layer.gradients(of: step, on: gpu).inputs
            let second = try layer.gradients(of: step, on: gpu).inputs
            let reference = try layer.gradients(of: step, on: cpu).inputs
            let what = "\(layer.layerName) \(a) \(b)"
            if operation == .add || operation == .max || operation == .sub {
                // g, masked or not, summed once: one rounding, the plain parity rule.
                ShapeGradientTest.expectParity(first, reference, what)
            } else {
                let twin = Self.reference(operation, inputs, step.outputGradients[0]!, round: ShapeGradientTest.half)
                ShapeGradientTest.expectWithinTwin(first, reference, twin: twin, what)
            }
            ShapeGradientTest.expectSameBits(first, second, what)
        }
        let works = gpu.placements.filter(\.placement.isGPU).map(\.work)
        #expect(works.contains("ReduceSum"))
        if operation != .add { #expect(works.contains(operation == .max ? "Greater" : "Mul")) }
    }

    @Test func binaryBadInputIsAnError() throws {
        let runner = try cpuRunner()
        let layer = BinaryLayer(.add)
        let inputs = try Self.operands([[2, 3], [3]], seed: 1, tied: false)
        let good = try ShapeGradientTest.step(layer, inputs, seed: 1)
        let wrong = GradientStep(inputs: inputs, outputs: good.outputs, outputGradients: [try Tensor(shape: [3, 2])],
                                 needsInputGradients: [true, true], parameterRoles: [])
        #expect { try layer.gradients(of: wrong, on: runner) } throws: { error in
            "\(error)".contains("Add backward: the gradient of output 0 is 3x2; the output is 2x3")
        }
        let missing = GradientStep(inputs: [inputs[0]], outputs: good.outputs, outputGradients: good.outputGradients,
                                   needsInputGradients: [true], parameterRoles: [])
        #expect(throws: LayerKitError.self) { try layer.gradients(of: missing, on: runner) }
        let pow = BinaryLayer(.pow)
        let powStep = try ShapeGradientTest.step(pow, try Self.operands([[2, 3], [2, 3]], seed: 1, tied: false), seed: 1)
        #expect { try pow.gradients(of: powStep, on: runner) } throws: { "\($0)".contains("Pow has no backward pass") }
        // Only the inputs that need a gradient get one; comparisons give zeros.
        let partial = GradientStep(inputs: inputs, outputs: good.outputs, outputGradients: good.outputGradients,
                                   needsInputGradients: [false, true], parameterRoles: [])
        let gradients = try layer.gradients(of: partial, on: runner).inputs
        #expect(gradients[0] == nil && gradients[1]?.shape == [3])
        let less = BinaryLayer(.less)
        let lessStep = try ShapeGradientTest.step(less, inputs, seed: 2)
        #expect(try less.gradients(of: lessStep, on: runner).inputs.allSatisfy { $0?.values.allSatisfy { $0 == 0 } == true })
    }

    // MARK: - Softmax and LogSoftmax

    /// dLoss/dx of Softmax (`log` false) or LogSoftmax along `axis`, or
    /// along every axis from it flattened, in float64.
    /// `round` is applied where the GPU's steps store a value: the identity
    /// for the reference, fp16 rounding for the GPU's fp16 twin.
    static func softmaxReference(_ x: Tensor, _ g: Tensor, axis: Int, log: Bool, flattened: Bool,
                                 round: (Double) -> Double = { $0 }) -> [Double] {
        let shape = x.shape
        let outer = shape[..<axis].reduce(1, *)
        let length = flattened ? shape[axis...].reduce(1, *) : shape[axis]
        let inner = flattened ? 1 : shape[(axis + 1)...].reduce(1, *)
        var dx = [Double](repeating: 0, count: x.count)
        for o in 0..<outer {
            for i in 0..<inner {
                let at = (0..<length).map { (o * length + $0) * inner + i }
                let m = at.map { Double(x[$0]) }.max()!
                let e = at.map { exp(Double(x[$0]) - m) }
                let s = e.reduce(0, +)
                let y = e.map { round($0 / s) }
                let gs = at.map { Double(g[$0]) }
                if log {
                    let total = round(gs.reduce(0, +))
                    for (j, index) in at.enumerated() { dx[index] = round(gs[j] - round(y[j] * total)) }
                } else {
                    let dot = round(zip(gs, y).reduce(0) { $0 + round($1.0 * $1.1) })
                    for (j, index) in at.enumerated() { dx[index] = round(y[j] * round(gs[j] - dot)) }
                }
            }
        }
        return dx
    }

    static let softmaxCases: [(shape: [Int], axis: Int, flattened: Bool)] = [
        ([2, 6, 3], 1, false), ([3, 7], 1, false), ([2, 3, 5], 2, false), ([4, 3], 0, false), ([2, 3, 2, 3], 1, true),
        ([2, 5, 2, 3], 1, false),
    ]

    @Test(arguments: [Softmax.Kind.softmax, .logSoftmax])
    func softmaxMatchesTheReference(kind: Softmax.Kind) throws {
        let runner = try cpuRunner()
        for (k, c) in Self.softmaxCases.enumerated() {
            let layer = try Softmax(axis: c.axis, kind: kind, flattensTrailingAxes: c.flattened)
            let x = try OpLayerTest.tensor(c.shape, seed: UInt64(k))
            let step = try ShapeGradientTest.step(layer, [x], seed: UInt64(k))
            let expected = Self.softmaxReference(x, step.outputGradients[0]!, axis: c.axis, log: kind == .logSoftmax,
                                                 flattened: c.flattened)
            ShapeGradientTest.expectGradient(try layer.gradients(of: step, on: runner).inputs[0], expected, shape: c.shape,
                                             "\(layer.layerName) \(c)")
        }
        let hardmax = try Softmax(axis: 1, kind: .hardmax)
        let step = try ShapeGradientTest.step(hardmax, [try OpLayerTest.tensor([2, 3], seed: 1)], seed: 1)
        #expect(try hardmax.gradients(of: step, on: runner).inputs[0]?.values == Array(repeating: 0, count: 6))
    }

    /// Along axis 1 every piece has a GPU form: all of it on the GPU, within
    /// max(1e-3, 2 x the fp16 twin's error) of the CPU (its products and
    /// sums are stored in fp16 between steps), the same bits twice.
    @Test(.enabled(if: TestGPU.isEnabled), arguments: [Softmax.Kind.softmax, .logSoftmax])
    func softmaxOnTheGPUMatchesTheCPU(kind: Softmax.Kind) throws {
        let gpu = try gpuRunner(), cpu = try cpuRunner()
        for (k, shape) in [[2, 6, 3, 3], [3, 7], [2, 5, 4]].enumerated() {
            let layer = try Softmax(axis: 1, kind: kind)
            let x = try OpLayerTest.tensor(shape, seed: UInt64(k), half: true)
            let step = try ShapeGradientTest.step(layer, [x], seed: UInt64(k), half: true)
            let first = try layer.gradients(of: step, on: gpu).inputs
            let second = try layer.gradients(of: step, on: gpu).inputs
            let twin = Self.softmaxReference(x, step.outputGradients[0]!, axis: 1, log: kind == .logSoftmax, flattened: false,
                                             round: ShapeGradientTest.half)
            ShapeGradientTest.expectWithinTwin(
                first, try layer.gradients(of: step, on: cpu).inputs, twin: [twin], "\(layer.layerName) \(shape)")
            ShapeGradientTest.expectSameBits(first, second, "\(layer.layerName) \(shape)")
        }
        #expect(!gpu.placements.isEmpty && gpu.placements.allSatisfy(\.placement.isGPU),
                "\(gpu.placements.filter { !$0.placement.isGPU })")
    }

    // MARK: - Reshape, Concat, Transpose

    /// Reshape, Flatten, Squeeze and Unsqueeze (all `ReshapeLayer`), Concat
    /// along axes 0, 1 and 2, Transpose by two permutations: each input's
    /// gradient is the output gradient's elements it became.
    @Test func elementMovingLayersMatchTheReference() throws {
        let runner = try cpuRunner()
        for (from, to, name) in [([2, 3, 4, 5], [2, 60], "Flatten"), ([2, 1, 5], [2, 5], "Squeeze"),
                                 ([3, 5], [3, 1, 5, 1], "Unsqueeze"), ([2, 3, 4], [4, 6], "Reshape")] {
            let layer = try ReshapeLayer(outputShape: to, name: name)
            let step = try ShapeGradientTest.step(layer, [try OpLayerTest.tensor(from, seed: 1)], seed: 2)
            ShapeGradientTest.expectGradient(try layer.gradients(of: step, on: runner).inputs[0],
                                             step.outputGradients[0]!.values.map(Double.init), shape: from, name)
        }
        for (axis, shapes) in [(1, [[2, 3, 4, 5], [2, 6, 4, 5], [2, 1, 4, 5]]), (0, [[1, 3], [2, 3]]), (2, [[2, 3, 2], [2, 3, 5]])] {
            let layer = try ConcatLayer(axis: axis)
            let inputs = try shapes.enumerated().map { try OpLayerTest.tensor($1, seed: UInt64($0)) }
            let step = try ShapeGradientTest.step(layer, inputs, seed: 3)
            let g = step.outputGradients[0]!
            let gradients = try layer.gradients(of: step, on: runner).inputs
            var offset = 0
            for (k, shape) in shapes.enumerated() {
                let expected = (0..<inputs[k].count).map { i -> Double in
                    var position = OpLayerTest.position(i, in: shape)
                    position[axis] += offset
                    return Double(g[ShapeGradientTest.broadcastIndex(position, in: g.shape)])
                }
                ShapeGradientTest.expectGradient(gradients[k], expected, shape: shape, "Concat axis \(axis) input \(k)")
                offset += shape[axis]
            }
        }
        for (shape, perm) in [([2, 3, 4, 5], [0, 2, 3, 1]), ([3, 4, 2], [1, 2, 0]), ([2, 3], [1, 0])] {
            let layer = try TransposeLayer(perm: perm)
            let step = try ShapeGradientTest.step(layer, [try OpLayerTest.tensor(shape, seed: 4)], seed: 5)
            let g = step.outputGradients[0]!
            let expected = (0..<shape.reduce(1, *)).map { i -> Double in
                let position = OpLayerTest.position(i, in: shape)
                return Double(g[ShapeGradientTest.broadcastIndex(perm.map { position[$0] }, in: g.shape)])
            }
            ShapeGradientTest.expectGradient(try layer.gradients(of: step, on: runner).inputs[0], expected, shape: shape,
                                             "Transpose \(perm)")
        }
    }

    /// Split's gradient is its outputs' joined (zeros for one the loss does
    /// not read); Expand's the gradient summed back to the input's shape.
    @Test func splitAndExpandMatchTheReference() throws {
        let runner = try cpuRunner()
        let split = try SplitLayer(axis: 1, sizes: [2, 3, 1])
        let x = try OpLayerTest.tensor([2, 6, 3], seed: 1)
        var step = try ShapeGradientTest.step(split, [x], seed: 2)
        step = GradientStep(inputs: step.inputs, outputs: step.outputs,
                            outputGradients: [step.outputGradients[0], nil, step.outputGradients[2]],
                            needsInputGradients: [true], parameterRoles: [])
        let expected = (0..<x.count).map { i -> Double in
            let position = OpLayerTest.position(i, in: x.shape)
            let (part, offset) = position[1] < 2 ? (0, 0) : position[1] < 5 ? (1, 2) : (2, 5)
            guard let g = step.outputGradients[part] else { return 0 }
            return Double(g[ShapeGradientTest.broadcastIndex([position[0], position[1] - offset, position[2]], in: g.shape)])
        }
        ShapeGradientTest.expectGradient(try split.gradients(of: step, on: runner).inputs[0], expected, shape: x.shape, "Split")
        for (from, to) in [([3, 1, 1], [2, 3, 4, 5]), ([1, 5], [2, 3, 4, 5]), ([2, 1, 4], [2, 3, 4])] {
            let expand = try ExpandLayer(shape: to, inputRank: from.count)
            let step = try ShapeGradientTest.step(expand, [try OpLayerTest.tensor(from, seed: 3)], seed: 4)
            let g = step.outputGradients[0]!
            var expected = [Double](repeating: 0, count: from.reduce(1, *))
            for o in 0..<g.count {
                expected[ShapeGradientTest.broadcastIndex(OpLayerTest.position(o, in: g.shape), in: from)] += Double(g[o])
            }
            ShapeGradientTest.expectGradient(try expand.gradients(of: step, on: runner).inputs[0], expected, shape: from,
                                             "Expand \(from) to \(to)")
        }
    }

    /// On the GPU the moves are exact: the same bits as the CPU's.
    @Test(.enabled(if: TestGPU.isEnabled)) func elementMovingLayersOnTheGPUMatchTheCPU() throws {
        let gpu = try gpuRunner(), cpu = try cpuRunner()
        let cases: [(any DifferentiableLayer, [[Int]])] = [
            (try ReshapeLayer(outputShape: [2, 60], name: "Flatten"), [[2, 3, 4, 5]]),
            (try ConcatLayer(axis: 1), [[2, 3, 4, 5], [2, 6, 4, 5], [2, 1, 4, 5]]),
            (try TransposeLayer(perm: [0, 2, 3, 1]), [[2, 3, 4, 5]]),
        ]
        for (layer, shapes) in cases {
            let inputs = try shapes.enumerated().map { try OpLayerTest.tensor($1, seed: UInt64($0), half: true) }
            let step = try ShapeGradientTest.step(layer, inputs, seed: 6, half: true)
            ShapeGradientTest.expectSameBits(try layer.gradients(of: step, on: gpu).inputs,
                                             try layer.gradients(of: step, on: cpu).inputs, layer.layerName)
        }
        #expect(gpu.placements.map(\.placement) == [.gpu, .gpu, .gpu])
    }

    @Test func concatBadInputIsAnError() throws {
        let runner = try cpuRunner()
        let layer = try ConcatLayer(axis: 1)
        let inputs = try [[2, 3], [2, 4]].map { try OpLayerTest.tensor($0, seed: 1) }
        let good = try ShapeGradientTest.step(layer, inputs, seed: 1)
        let wrong = GradientStep(inputs: inputs, outputs: good.outputs, outputGradients: [try Tensor(shape: [2, 6])],
                                 needsInputGradients: [true, true], parameterRoles: [])
        #expect { try layer.gradients(of: wrong, on: runner) } throws: { error in
            "\(error)".contains("Concat backward: the gradient of output 0 is 2x6; the output is 2x7")
        }
        let partial = GradientStep(inputs: inputs, outputs: good.outputs, outputGradients: good.outputGradients,
                                   needsInputGradients: [true, false], parameterRoles: [])
        let gradients = try layer.gradients(of: partial, on: runner).inputs
        #expect(gradients[0]?.shape == [2, 3] && gradients[1] == nil)
    }
}
