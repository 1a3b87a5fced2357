import Foundation
import Testing
@testable import LayerKitONNX
@testable import LayerKit

/// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss beyond the onnx
/// node tests and the onnxruntime cases (Fixtures/onnx-cases/losses): the
/// ONNX spec's worked example, float64 kept in Double, and hostile targets,
/// attributes and shapes as errors naming the node.
@Suite struct LossOpTests {
    static func run(_ op: String, _ inputs: [TypedTensor?], _ opset: Int, _ attributes: [String: ONNXAttribute])
        throws -> [TypedTensor] {
        try TypedIndexingKernelTests.run(op, inputs, opset: opset, attributes)
    }

    static func int64(_ shape: [Int], _ values: [Int64]) throws -> TypedTensor { try TypedIndexingKernelTests.int64(shape, values) }
    static func float(_ shape: [Int], _ values: [Double]) throws -> TypedTensor { try TypedIndexingKernelTests.float(shape, values) }

    /// The NegativeLogLikelihoodLoss spec's example: input [1, 3, 2], target
    /// [[2, 1]], weight [0.2, 0.3, 0.1], mean: -(1 * 0.1 + 2 * 0.3) / (0.1 + 0.3).
    @Test func theSpecsWeightedMeanExample() throws {
        let x = try Self.float([1, 3, 2], [1, 2, 2, 2, 1, 2])
        let loss = try Self.run("NegativeLogLikelihoodLoss", [x, Self.int64([1, 2], [2, 1]), Self.float([3], [0.2, 0.3, 0.1])],
                                22, [:])[0]
        #expect(loss.shape == [] && abs(loss.doubles()[0] - -1.75) < 1e-6)
    }

    /// An ignored target adds nothing to the mean's denominator, and may be
    /// any value, a class index or not.
    @Test func ignoredTargetsLeaveTheMeansDenominator() throws {
        let x = try Self.float([3, 2], [-1, -2, -3, -4, -5, -6])
        let targets = try Self.int64([3], [0, -7, 1])
        let mean = try Self.run("NegativeLogLikelihoodLoss", [x, targets], 13, ["ignore_index": .int(-7)])[0]
        #expect(mean.doubles() == [(1 + 6) / 2])
        let none = try Self.run("NegativeLogLikelihoodLoss", [x, targets], 13, ["ignore_index": .int(-7), "reduction": .string("none")])[0]
        #expect(none.shape == [3] && none.doubles() == [1, 0, 6])
    }

    /// float64 scores compute in Double: a loss float32 cannot hold comes back whole.
    @Test func float64ScoresStayDouble() throws {
        let value = 1 + 1e-12
        let x = try TypedTensor(.float64, shape: [1, 2], doubles: [-value, 0])
        let loss = try Self.run("NegativeLogLikelihoodLoss", [x, Self.int64([1], [0])], 22, [:])[0]
        #expect(loss.elementType == .float64 && loss.doubles() == [value])
        // SoftmaxCrossEntropyLoss of two equal scores: log 2 per position, and log_prob -log 2.
        let outputs = try Self.run("SoftmaxCrossEntropyLoss", [TypedTensor(.float64, shape: [1, 2], doubles: [3, 3]),
                                                               Self.int64([1], [1])], 13, [:])
        let (cross, logProb) = (outputs[0].doubles(), outputs[1].doubles())
        #expect(outputs[0].elementType == .float64 && abs(cross[0] - log(2.0)) < 1e-15)
        #expect(logProb.count == 2 && logProb.allSatisfy { abs($0 + log(2.0)) < 1e-15 })
    }

    @Test func hostileTargetsAndAttributesAreErrorsNamingTheNode() throws {
        let x = try Self.float([2, 3], [0, 0, 0, 0, 0, 0])
        let failure = { (op: String, inputs: [TypedTensor?], attributes: [String: ONNXAttribute]) in
            TypedIndexingKernelTests.failure(op, inputs, opset: 13, attributes) ?? "no error"
        }
        let cases: [(String, String)] = [
            (failure("NegativeLogLikelihoodLoss", [x, try Self.int64([2], [0, 3])], [:]),
             "node 'n' (NegativeLogLikelihoodLoss): target 3 at position 1 is not a class index in 0..<3"),
            (failure("SoftmaxCrossEntropyLoss", [x, try Self.int64([2], [-1, 0])], ["ignore_index": .int(5)]),
             "node 'n' (SoftmaxCrossEntropyLoss): target -1 at position 0 is not a class index in 0..<3 nor ignore_index 5"),
            (failure("NegativeLogLikelihoodLoss", [x, try Self.int64([2], [Int64.max, 0])], [:]),
             "target 9223372036854775807 at position 0 is not a class index"),
            (failure("NegativeLogLikelihoodLoss", [x, try Self.int64([2], [0, 0])], ["reduction": .string("avg")]),
             "reduction 'avg' is not none, sum or mean"),
            (failure("NegativeLogLikelihoodLoss", [x, try Self.int64([3], [0, 0, 0])], [:]), "target 3 must be 2 for scores 2x3"),
            (failure("NegativeLogLikelihoodLoss", [x, try Self.int64([2], [0, 0]), try Self.float([2], [1, 1])], [:]),
             "weight must be 3 floats, one per class"),
            (failure("SoftmaxCrossEntropyLoss", [try Self.float([3], [0, 0, 0]), try Self.int64([1], [0])], [:]),
             "scores must be [N, C] or [N, C, d1, ...], got 3"),
            (failure("SoftmaxCrossEntropyLoss", [x, try Self.float([2], [0, 0])], [:]),
             "target is float32; the op takes int32 or int64 class indices"),
            (failure("NegativeLogLikelihoodLoss", [x, try Self.int64([2], [0, 0])], ["weights": .int(1)]),
             "attribute 'weights' is not supported"),
        ]
        for (error, expected) in cases {
            #expect(error.contains(expected), "\(error)")
        }
    }

    /// A constant target out of range is refused when the model loads.
    @Test func anOutOfRangeConstantTargetIsALoadError() {
        let target = ONNXBytes.tensor("t", dims: [2, 4, 5], type: 7, 
                                      PB.bytes(7, ([7] + Array(repeating: 0, count: 39)).flatMap(PB.varint)))
        let error = NormalizationOpsTests.loadError(NormalizationOpsTests.node("NegativeLogLikelihoodLoss", inputs: ["x", "t"]),
                                                    opset: 13, initializers: [target])
        #expect(error.contains("node 'n1' (NegativeLogLikelihoodLoss): target 7 at position 0 is not a class index in 0..<3"),
                "\(error)")
    }
}
