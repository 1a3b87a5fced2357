import Foundation
import Testing
@testable import LayerKit

/// Parameters computed from float inputs (a Conv's weights, Clip's bounds,
/// a weight computed from an input) are values of the plan, as integer
/// inputs are: the model loads and runs, planned per value; plans of new
/// values and new shapes share the layers; and the plan cache keeps the
/// most recently used plans.
struct PreparedInputTests {
    /// Conv(x, Relu(w)) with w an input: expected from a float64 convolution written here.
    @Test func convolutionWeightsComputedFromAnInputRun() throws {
        let nodes = [ONNXBytes.node("Relu", inputs: ["w"], outputs: ["wr"], name: "relu"),
                     ONNXBytes.node("Conv", inputs: ["x", "wr"], outputs: ["y"], name: "conv")]
        let data = ModelGraphTests.model(nodes: nodes, inputs: [ModelGraphTests.value("x", [1, 1, 3, 3]),
                                                                 ModelGraphTests.value("w", [1, 1, 2, 2])],
                                         outputs: [ModelGraphTests.value("y", [1, 1, 2, 2])])
        for units in [ComputeUnits.cpuOnly, .gpu] {
            let model = try Model(data: data, computeUnits: units, notice: { _ in })
            let x = (0..<9).map { Float($0) - 4 }
            for weights in [[1, -2, 0.5, 3], [-1, 1, 2, -0.25]] as [[Float]] {
                let y = try #require(try model.predict(inputs: ["x": Tensor(shape: [1, 1, 3, 3], values: x),
                                                                "w": Tensor(shape: [1, 1, 2, 2], values: weights)])["y"])
                let w = weights.map { Double(max($0, 0)) }
                var expected: [Double] = []
                for r in 0..<2 {
                    for c in 0..<2 {
                        var sum = 0.0
                        for i in 0..<2 { for j in 0..<2 { sum += Double(x[(r + i) * 3 + c + j]) * w[i * 2 + j] } }
                        expected.append(sum)
                    }
                }
                for (value, reference) in zip(y.values, expected) {
                    // The GPU stores fp16: the parity rule's bound.
                    #expect(abs(Double(value) - reference) <= (units == .gpu ? 2e-3 : 1e-6) * max(1, abs(reference)),
                            "\(units): \(value) vs \(reference)")
                }
            }
        }
    }

    @Test func clipBoundsGivenAsInputsRun() throws {
        let node = ONNXBytes.node("Clip", inputs: ["x", "lo", "hi"], outputs: ["y"], name: "clip")
        let data = ModelGraphTests.model(nodes: [node], inputs: [ModelGraphTests.value("x", [4]), ModelGraphTests.value("lo", []),
                                                                  ModelGraphTests.value("hi", [])],
                                         outputs: [ModelGraphTests.value("y", [4])])
        let model = try Model(data: data, computeUnits: .cpuOnly)
        let y = try model.predict(inputs: ["x": Tensor(shape: [4], values: [-3, -0.25, 0.5, 9]),
                                           "lo": Tensor(shape: [], values: [-1]), "hi": Tensor(shape: [], values: [2])])
        #expect(y["y"]?.values == [-1, -0.25, 0.5, 2])
    }

    /// An op only the typed kernels of folding compute (CumSum, ArgMax)
    /// reads its float input at prepare, with a notice saying so; the
    /// values are exact sums and indices, written here.
    @Test func opsOfTheFoldingKernelsRunOnFloatInputs() throws {
        let nodes = [ONNXBytes.node("CumSum", inputs: ["x", "axis"], outputs: ["s"], name: "cumsum"),
                     ONNXBytes.node("ArgMax", inputs: ["x"], outputs: ["i"], name: "argmax",
                                    attributes: [RankRuleTests.int("axis", 1)])]
        let data = ModelGraphTests.model(nodes: nodes, inputs: [ModelGraphTests.value("x", [2, 3])],
                                         outputs: [ModelGraphTests.value("s", [2, 3]), ModelGraphTests.value("i", [2, 1], type: 7)],
                                         initializers: [ONNXBytes.tensor("axis", dims: [], type: 7, PB.bytes(9, PB.littleEndian([Int64(1)])))])
        let notices = BackendTests.Notices()
        let model = try Model(data: data, name: "m.onnx", computeUnits: .cpuOnly, notice: notices.append)
        #expect(notices.all.contains { $0.contains("m.onnx: input 'x' is read at prepare") }, "\(notices.all)")
        for x in [[1, -2, 4, 0.5, 3, -1], [-1, -1, -3, 9, 0, 9]] as [[Float]] {
            let y = try model.predict(typed: ["x": TypedTensor(.float32, shape: [2, 3], doubles: x.map(Double.init))])
            let sums = [0, 3].flatMap { row in (1...3).map { n in x[row..<row + n].reduce(0, +) } }
            #expect(y["s"]?.doubles() == sums.map(Double.init))
            let indices = [0, 3].map { row in Int64(x[row..<row + 3].indices.max { x[$0] < x[$1] }! - row) }
            #expect(y["i"]?.elementType == .int64 && y["i"]?.integers() == indices)
        }
    }

    /// A plan for new values of an integer input takes the layers of the
    /// last one (their packed weights, their pipelines): the node sees the
    /// same shapes and constants, so its conversion would be the same.
    @Test func aPlanForNewValuesReusesTheLayers() throws {
        let nodes = [ONNXBytes.node("Conv", inputs: ["x", "w"], outputs: ["c"], name: "conv"),
                     ONNXBytes.node("Gather", inputs: ["c", "i"], outputs: ["y"], name: "gather",
                                    attributes: [RankRuleTests.int("axis", 1)])]
        let weights = (0..<8).map { Float($0) - 3.5 }
        let data = ModelGraphTests.model(nodes: nodes, inputs: [ModelGraphTests.value("x", [1, 2, 3, 3]),
                                                                 ModelGraphTests.value("i", [1], type: 7)],
                                         outputs: [ModelGraphTests.value("y", [1, 1, 3, 3])],
                                         initializers: [ONNXBytes.tensor("w", dims: [4, 2, 1, 1], type: 1,
                                                                         PB.bytes(9, PB.littleEndian(weights.map(\.bitPattern))))])
        let model = try Model(data: data, computeUnits: .cpuOnly)
        let x = try Tensor(shape: [1, 2, 3, 3], values: (0..<18).map { Float($0) })
        func convolution() -> Layer? { model.planForTests?.graph.steps.first { $0.opType == "Conv" }?.layer }
        var layers: [Layer] = []
        for channel in 0..<4 {
            let y = try #require(try model.predict(inputs: ["x": x, "i": Tensor(shape: [1], values: [Float(channel)])])["y"])
            // Output channel `channel` of the 1x1 convolution, in float64.
            let expected = (0..<9).map { p in Double(weights[2 * channel]) * Double(p) + Double(weights[2 * channel + 1]) * Double(9 + p) }
            #expect(y.values.map(Double.init) == expected)
            layers.append(try #require(convolution()))
        }
        #expect(layers.allSatisfy { $0 === layers[0] })
    }

    /// A plan for new values of an integer input takes the float32 tensor
    /// of a file initializer that a step reads (the Add's bias) from the
    /// last one, not a new conversion: a decoder planned per token has its
    /// embedding and output weights (hundreds of MB) there. Expected values:
    /// x[:, i] + b[i], in float64.
    @Test func aPlanForNewValuesSharesTheInitializers() throws {
        let nodes = [ONNXBytes.node("Add", inputs: ["x", "b"], outputs: ["s"], name: "add"),
                     ONNXBytes.node("Gather", inputs: ["s", "i"], outputs: ["y"], name: "gather",
                                    attributes: [RankRuleTests.int("axis", 1)])]
        let bias: [Float] = [0.25, -1.5, 3]
        let data = ModelGraphTests.model(nodes: nodes, inputs: [ModelGraphTests.value("x", [2, 3]),
                                                                 ModelGraphTests.value("i", [1], type: 7)],
                                         outputs: [ModelGraphTests.value("y", [2, 1])],
                                         initializers: [ONNXBytes.tensor("b", dims: [1, 3], type: 1,
                                                                         PB.bytes(9, PB.littleEndian(bias.map(\.bitPattern))))])
        let model = try Model(data: data, computeUnits: .cpuOnly)
        let x: [Float] = [1, 2, 4, -8, 16, 0.5]
        var biases: [Tensor] = []
        for column in [0, 2, 1] {
            let y = try #require(try model.predict(inputs: ["x": Tensor(shape: [2, 3], values: x),
                                                            "i": Tensor(shape: [1], values: [Float(column)])])["y"])
            let expected = [0, 1].map { row in Double(x[3 * row + column]) + Double(bias[column]) }
            #expect(y.values.map(Double.init) == expected)
            biases.append(try #require(model.planForTests?.graph.values.first { $0.name == "b" }?.constant))
        }
        #expect(biases.allSatisfy { $0 === biases[0] }, "each plan converted the initializer again")
    }

    /// Import once, plan per shape: plans for new input shapes take the
    /// Conv layer of the first (its conversion reads the input's rank only),
    /// on the GPU with the kernel and weights of each shape's block; Flatten,
    /// whose conversion reads the extents, is converted again. Expected
    /// values: a float64 convolution written here.
    @Test func aPlanForANewShapeReusesTheLayers() throws {
        let nodes = [ONNXBytes.node("Conv", inputs: ["x", "w"], outputs: ["c"], name: "conv"),
                     ONNXBytes.node("Flatten", inputs: ["c"], outputs: ["y"], name: "flatten")]
        let weights = (0..<16).map { Float($0 % 5) - 2 }
        let data = ModelGraphTests.model(nodes: nodes, inputs: [ModelGraphTests.value("x", ["N", 2, "H", "W"])],
                                         outputs: [ModelGraphTests.value("y", ["N", "F"])],
                                         initializers: [ONNXBytes.tensor("w", dims: [8, 2, 1, 1], type: 1,
                                                                         PB.bytes(9, PB.littleEndian(weights.map(\.bitPattern))))])
        for units in [ComputeUnits.cpuOnly, .gpu] {
            let model = try Model(data: data, computeUnits: units, notice: { _ in })
            func layer(_ op: String) -> Layer? { model.planForTests?.graph.steps.first { $0.opType == op }?.layer }
            var convolutions: [Layer] = [], flattens: [Layer] = []
            for shape in [[1, 2, 3, 3], [2, 2, 5, 4], [3, 2, 16, 16]] {
                let (n, h, w) = (shape[0], shape[2], shape[3])
                let x = (0..<(n * 2 * h * w)).map { Float($0 % 7) * 0.25 - 0.75 }
                let y = try #require(try model.predict(inputs: ["x": Tensor(shape: shape, values: x)])["y"])
                #expect(y.shape == [n, 8 * h * w])
                for b in 0..<n {
                    for m in 0..<8 {
                        for p in 0..<(h * w) {
                            let reference = (0..<2).reduce(0.0) { sum, c in
                                sum + Double(weights[m * 2 + c]) * Double(x[(b * 2 + c) * h * w + p])
                            }
                            let value = Double(y.values[b * 8 * h * w + m * h * w + p])
                            #expect(abs(value - reference) <= (units == .gpu ? 2e-3 : 1e-6) * max(1, abs(reference)),
                                    "\(units) \(shape): \(value) vs \(reference)")
                        }
                    }
                }
                convolutions.append(try #require(layer("Conv")))
                flattens.append(try #require(layer("Flatten")))
            }
            #expect(convolutions.allSatisfy { $0 === convolutions[0] }, "\(units)")
            #expect(flattens[1] !== flattens[0] && flattens[2] !== flattens[1], "\(units)")
        }
    }

    /// The load-time plan guesses every symbolic dimension as 1, which can
    /// disagree with itself: here (as in GPT-2's KV-cache export) a mask of
    /// `t` positions is gathered at the `p + s` positions of the past and the
    /// new values, out of range when all three are 1. What that plan needed
    /// (the mask's value) proves nothing: real shapes plan once per shape,
    /// with no "read at prepare" notice, and new mask values reuse the plan.
    /// Expected: the mask itself (its `p + s` = `t` entries, in order).
    @Test func aGuessedShapeThatNeedsValuesDoesNotPlanPerValue() throws {
        let nodes = [ONNXBytes.node("Concat", inputs: ["past", "x"], outputs: ["both"], name: "concat",
                                    attributes: [RankRuleTests.int("axis", 1)]),
                     ONNXBytes.node("Shape", inputs: ["both"], outputs: ["shape"], name: "shape"),
                     ONNXBytes.node("Gather", inputs: ["shape", "one"], outputs: ["n"], name: "length"),
                     ONNXBytes.node("Range", inputs: ["zero", "n", "one"], outputs: ["positions"], name: "range"),
                     ONNXBytes.node("Gather", inputs: ["mask", "positions"], outputs: ["y"], name: "gather",
                                    attributes: [RankRuleTests.int("axis", 1)])]
        let data = ModelGraphTests.model(nodes: nodes,
                                         inputs: [ModelGraphTests.value("mask", [1, "t"], type: 7),
                                                  ModelGraphTests.value("past", [1, "p"]), ModelGraphTests.value("x", [1, "s"])],
                                         outputs: [ModelGraphTests.value("y", [1, "n"], type: 7)],
                                         initializers: [RangeFoldingTests.ints("zero", 0), RangeFoldingTests.ints("one", 1)])
        let notices = BackendTests.Notices()
        let model = try Model(data: data, name: "m.onnx", computeUnits: .cpuOnly, notice: notices.append)
        var plans: [ModelPlan] = []
        for mask in [[1, 1, 0, 1, 1], [0, 1, 1, 1, 0]] as [[Int64]] {
            let y = try model.predict(typed: ["mask": TypedTensor(.int64, shape: [1, 5], doubles: mask.map(Double.init)),
                                              "past": TypedTensor(.float32, shape: [1, 2], doubles: [0, 0]),
                                              "x": TypedTensor(.float32, shape: [1, 3], doubles: [0, 0, 0])])
            #expect(y["y"]?.integers() == mask)
            plans.append(try #require(model.planForTests))
        }
        #expect(plans[1] === plans[0], "a new mask value made a new plan")
        #expect(!notices.all.contains { $0.contains("read at prepare") }, "\(notices.all)")
    }

    /// Four plans are kept, the least recently used one dropped first.
    @Test func planCacheDropsTheLeastRecentlyUsedPlan() throws {
        let data = ModelGraphTests.model(nodes: [ONNXBytes.node("Relu", name: "relu")],
                                         inputs: [ModelGraphTests.value("x", ["N", 2])], outputs: [ModelGraphTests.value("y", ["N", 2])])
        let model = try Model(data: data, computeUnits: .cpuOnly)
        func plan(_ n: Int) throws -> ModelPlan? {
            _ = try model.predict(inputs: ["x": Tensor(shape: [n, 2])])
            return model.planForTests
        }
        let first = try plan(1)  // the load-time plan (N = 1)
        for n in 2...Model.planCapacity { _ = try plan(n) }
        #expect(try plan(1) === first)  // used again: now the most recent
        _ = try plan(Model.planCapacity + 1)  // drops N = 2, the least recently used
        #expect(try plan(1) === first)
        let second = try plan(2)
        #expect(second !== nil && second !== first)
    }
}

