import Foundation
import Testing
@testable import LayerKit

/// Element types checked at load against each op's ONNX schema, as
/// onnxruntime checks them, and against what LayerKit computes. Each
/// expected list of types is ONNX's (the op's schema at that version in the
/// ONNX operator spec), not LayerKit's output; each refusal has a control
/// that loads.
extension ModelValidationTests {
    /// A model of `nodes` at `opset` from `inputs` to a float output `y`.
    static func typedModel(_ nodes: [[UInt8]], inputs: [[UInt8]], initializers: [[UInt8]] = [], opset: Int64 = 17) -> Data {
        ONNXBytes.model(opsets: [("", opset)],
                        graph: ONNXBytes.graph(nodes: nodes, initializers: initializers, inputs: inputs,
                                               extra: PB.bytes(12, G.value("y", nil))))
    }

    static func int64s(_ name: String, _ dims: [Int64], _ values: [Int64]) -> [UInt8] {
        ONNXBytes.tensor(name, dims: dims, type: 7, PB.bytes(9, PB.littleEndian(values)))
    }

    @Test func anInputOfATypeItsSchemaDoesNotAllowIsRefused() throws {
        let relu = ONNXBytes.node("Relu", name: "relu")
        let int32Weights = ONNXBytes.tensor("w", dims: [1, 1, 1, 1], type: 6, PB.bytes(9, PB.littleEndian([Int32(2)])))
        let cases: [(Data, String)] = [
            // Relu-13's T: float, float16, double, bfloat16.
            (Self.typedModel([relu], inputs: [G.value("x", [2], type: 7)], opset: 13),
             "node 'relu' (Relu): input 0 ('x') is int64, which Relu at opset 13 (its version 13) does not allow for "
             + "X (type T): it takes float32, float16, float64, bfloat16 (onnxruntime refuses it too)"),
            // Relu-14 adds int8 to int64, no unsigned type.
            (Self.typedModel([relu], inputs: [G.value("x", [2], type: 2)]),
             "node 'relu' (Relu): input 0 ('x') is uint8, which Relu at opset 17 (its version 14) does not allow for "
             + "X (type T): it takes float32, int8, int16, int32, int64, float16, float64, bfloat16 (onnxruntime refuses it too)"),
            // Conv-11's T: float16, float, double, for X and W alike.
            (Self.typedModel([ONNXBytes.node("Conv", inputs: ["x", "w"], name: "conv")],
                             inputs: [G.value("x", [1, 1, 2, 2])], initializers: [int32Weights]),
             "node 'conv' (Conv): input 1 ('w') is int32, which Conv at opset 17 (its version 11) does not allow for "
             + "W (type T): it takes float32, float16, float64 (onnxruntime refuses it too)"),
        ]
        for (data, expected) in cases {
            #expect(Self.message(data) == "m.onnx: " + expected)
        }
        // Control: a float32 Relu at opset 13 loads and runs.
        let model = try Model(data: Self.typedModel([relu], inputs: [G.value("x", [2])], opset: 13), computeUnits: .cpuOnly)
        #expect(try model.predict(inputs: ["x": Tensor(shape: [2], values: [-1, 3])])["y"]?.values == [0, 3])
    }

    @Test func inputsSharingATypeVariableMustHaveOneType() throws {
        let add = ONNXBytes.node("Add", inputs: ["x", "b"], name: "add")
        #expect(Self.message(Self.typedModel([add], inputs: [G.value("x", [2])], initializers: [Self.int64s("b", [1], [1])]))
                == "m.onnx: node 'add' (Add): input 0 ('x') is float32 and input 1 ('b') is int64, but Add at opset 17 "
                + "(its version 14) takes one type for both (type T) (onnxruntime refuses it too)")
        // Control: float32 and float32 load and run.
        let model = try Model(data: Self.typedModel([add], inputs: [G.value("x", [2])], initializers: [Self.weight("b", [1], [1])]),
                              computeUnits: .cpuOnly)
        #expect(try model.predict(inputs: ["x": Tensor(shape: [2], values: [-1, 3])])["y"]?.values == [0, 4])
    }

    /// A node's output type follows from its schema (Shape's output is
    /// int64) or its attributes (Cast's `to`), and is checked where it is read.
    @Test func typesInferredNodeByNodeAreChecked() throws {
        let toInt64 = PB.string(1, "to") + PB.int(3, 7) + PB.int(20, 2)
        let cast = ONNXBytes.node("Cast", inputs: ["x"], outputs: ["c"], name: "cast", attributes: [toInt64])
        #expect(Self.message(Self.typedModel([cast, ONNXBytes.node("Relu", inputs: ["c"], name: "relu")],
                                             inputs: [G.value("x", [2])], opset: 13))
                == "m.onnx: node 'relu' (Relu): input 0 ('c') is int64, which Relu at opset 13 (its version 13) does not "
                + "allow for X (type T): it takes float32, float16, float64, bfloat16 (onnxruntime refuses it too)")
        let shape = ONNXBytes.node("Shape", inputs: ["x"], outputs: ["s"], name: "shape")
        #expect(Self.message(Self.typedModel([shape, ONNXBytes.node("Add", inputs: ["x", "s"], name: "add")],
                                             inputs: [G.value("x", [2])]))
                == "m.onnx: node 'add' (Add): input 0 ('x') is float32 and input 1 ('s') is int64, but Add at opset 17 "
                + "(its version 14) takes one type for both (type T) (onnxruntime refuses it too)")
        // Control: Shape's int64 is a Reshape's shape, which its schema fixes as int64.
        let reshape = ONNXBytes.node("Reshape", inputs: ["x", "s"], name: "reshape")
        let model = try Model(data: Self.typedModel([shape, reshape], inputs: [G.value("x", [2])]), computeUnits: .cpuOnly)
        #expect(try model.predict(inputs: ["x": Tensor(shape: [2], values: [-1, 3])])["y"]?.values == [-1, 3])
    }

    /// A type ONNX allows for the op but LayerKit does not compute it in is
    /// refused saying so, and how LayerKit computes the op.
    @Test func aTypeONNXAllowsButLayerKitDoesNotComputeIsRefusedDistinctly() throws {
        let relu = ONNXBytes.node("Relu", name: "relu")
        #expect(Self.message(Self.typedModel([relu], inputs: [G.value("x", [2], type: 7)]))
                == "m.onnx: node 'relu' (Relu): input 0 ('x') is int64, which ONNX allows but LayerKit does not compute "
                + "for Relu: it computes float types in float32 by its layer (CPU and GPU)")
        // Control: int64 Neg, which has a folding kernel, loads.
        _ = try Model(data: Self.typedModel([ONNXBytes.node("Neg", name: "neg")], inputs: [G.value("x", [2], type: 7)]),
                      computeUnits: .cpuOnly)
    }
}
