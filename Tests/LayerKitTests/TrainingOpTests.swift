import Foundation
import Testing
@testable import LayerKitONNX
@testable import LayerKit

/// ai.onnx.preview.training's optimizers beyond the onnx node tests: one
/// step worked out by hand, and mismatched inputs as errors naming the node.
@Suite struct TrainingOpTests {
    typealias T = TypedIndexingKernelTests

    static func run(_ op: String, _ inputs: [TypedTensor], _ attributes: [String: ONNXAttribute]) throws -> [TypedTensor] {
        let node = ONNXNode(name: "n", opType: op, domain: ONNXOperators.trainingDomain, inputs: inputs.indices.map { "i\($0)" },
                            outputs: ["x", "v"], attributes: attributes)
        let context = ONNXNodeContext(node: node, opset: 1, inputShapes: inputs.map(\.shape), initializers: inputs.map { _ in nil })
        return try #require(try TypedKernels.outputs(of: context, inputs))
    }

    @Test func nesterovMomentumStep() throws {
        // g = 2 + 0.5 * 4 = 4; v = 0.5 * 1 + 1 * 4 = 4.5 (beta applies from T = 1); x = 4 - 0.1 * (4 + 0.5 * 4.5) = 3.375.
        let outputs = try Self.run("Momentum", [try T.float([], [0.1]), try T.int64([], [1]), try T.float([1], [4]),
                                                try T.float([1], [2]), try T.float([1], [1])],
                                   ["alpha": .float(0.5), "beta": .float(1), "mode": .string("nesterov"),
                                    "norm_coefficient": .float(0.5)])
        #expect(outputs.map { $0.doubles() } == [[3.375], [4.5]])
    }

    @Test func mismatchedListsAreErrors() throws {
        let r = try T.float([], [0.1]), t = try T.int64([], [0]), x = try T.float([2], [1, 2])
        #expect(throws: LayerKitError.self) { try Self.run("Adagrad", [r, t, x, x], [:]) }
        #expect(throws: LayerKitError.self) { try Self.run("Adam", [r, t, x, try T.float([1], [1]), x, x], [:]) }
        #expect(throws: LayerKitError.self) { try Self.run("Momentum", [r, t, x, x, x], ["mode": .string("heavy")]) }
    }
}
