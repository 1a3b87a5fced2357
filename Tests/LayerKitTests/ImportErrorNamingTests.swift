import Foundation
import Testing
@testable import LayerKit

/// Issue 14 class 12: an error a layer's constructor throws ("Conv: group
/// must be >= 1") names the model's node, once, as the importer's own errors do.
struct ImportErrorNamingTests {
    /// Conv from x [1, 3, 2, 2] with 2x3x1x1 weights and attribute `group`.
    static func conv(group: Int64) -> Data {
        let weights = ONNXBytes.tensor("w", dims: [2, 3, 1, 1], type: 1,
                                       PB.bytes(9, PB.littleEndian([Float](repeating: 0.5, count: 6).map(\.bitPattern))))
        let attribute = PB.string(1, "group") + PB.int(3, group) + PB.int(20, 2)  // AttributeProto INT
        return ModelGraphTests.model(
            nodes: [ONNXBytes.node("Conv", inputs: ["x", "w"], outputs: ["y"], name: "conv7", attributes: [attribute])],
            inputs: [ModelGraphTests.value("x", [1, 3, 2, 2])], outputs: [ModelGraphTests.value("y", [1, 2, 2, 2])],
            initializers: [weights])
    }

    @Test func aConstructorsErrorNamesTheNodeOnce() throws {
        #expect {
            _ = try Model(data: Self.conv(group: 0), name: "m.onnx", computeUnits: .cpuOnly)
        } throws: { error in
            let text = "\(error)"
            return text.hasPrefix("m.onnx: node 'conv7' (Conv): Conv: group must be >= 1")
                && text.components(separatedBy: "node 'conv7'").count == 2
        }
        // Control: the same model with group 1 loads and computes 3 * 0.5 * x per output channel.
        let model = try Model(data: Self.conv(group: 1), name: "m.onnx", computeUnits: .cpuOnly)
        let y = try #require(try model.predict(inputs: ["x": Tensor(shape: [1, 3, 2, 2], values: [Float](repeating: 2, count: 12))])["y"])
        #expect(y.values == [Float](repeating: 3, count: 8))
    }

    /// A custom Swish node whose per-channel beta (a constant input) has 5
    /// values for a 3-channel input: refused at load, naming the node.
    static func swish(betas: Int) -> Data {
        let beta = ONNXBytes.tensor("beta", dims: [Int64(betas)], type: 1,
                                    PB.bytes(9, PB.littleEndian([Float](repeating: 1, count: betas).map(\.bitPattern))))
        let node = ONNXBytes.node("Swish", inputs: ["x", "beta"], outputs: ["y"], name: "sw") + PB.string(7, "layerkit")
        return ONNXBytes.model(opsets: [("", 17), ("layerkit", 1)], graph: ONNXBytes.graph(
            nodes: [node], initializers: [beta], inputs: [ModelGraphTests.value("x", [1, 3, 1, 2])],
            extra: PB.bytes(12, ModelGraphTests.value("y", nil))))
    }

    @Test func perChannelValuesThatDoNotFitNameTheNodeAtLoad() throws {
        #expect {
            _ = try Model(data: Self.swish(betas: 5), name: "m.onnx", computeUnits: .cpuOnly)
        } throws: { error in
            "\(error)".hasPrefix("m.onnx: node 'sw' (Swish): ") && "\(error)".contains("5 'beta' weights for 3 channels")
        }
        // Control: 3 betas of 1 fit and compute x * sigmoid(x).
        let model = try Model(data: Self.swish(betas: 3), name: "m.onnx", computeUnits: .cpuOnly)
        let x: [Float] = [-2, -1, 0, 1, 2, 3]
        let y = try #require(try model.predict(inputs: ["x": Tensor(shape: [1, 3, 1, 2], values: x)])["y"])
        for (got, v) in zip(y.values, x) {
            let want = Double(v) / (1 + exp(-Double(v)))
            #expect(abs(Double(got) - want) <= 1e-6)
        }
    }
}
