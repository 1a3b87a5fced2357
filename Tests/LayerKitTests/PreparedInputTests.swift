import Foundation
import Testing
@testable import LayerKit

/// Parameters computed from float inputs (a Conv's weights, Clip's bounds,
/// a weight computed from an input) are values of the plan, as integer
/// inputs are: the model loads and runs, planned per value; and the plan
/// cache keeps the most recently used plans.
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
