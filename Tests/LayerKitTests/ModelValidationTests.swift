import Foundation
import Testing
@testable import LayerKit

/// Load-time validation as onnxruntime's (issue 14, classes 2 and 8):
/// names defined once, every use defined, no cycles, node input and output
/// counts per op. Each refusal has a control that loads.
struct ModelValidationTests {
    typealias G = ModelGraphTests

    static func message(_ data: Data) -> String? {
        do { _ = try Model(data: data, name: "m.onnx", computeUnits: .cpuOnly); return nil } catch { return "\(error)" }
    }

    static func weight(_ name: String, _ dims: [Int64], _ values: [Float]) -> [UInt8] {
        ONNXBytes.tensor(name, dims: dims, type: 1, PB.bytes(9, PB.littleEndian(values.map(\.bitPattern))))
    }

    @Test func repeatedGraphInputsAndOutputsAreErrorsNotTraps() throws {
        let relu = ONNXBytes.node("Relu", name: "relu")
        // Both crashed before (Dictionary(uniqueKeysWithValues:)).
        #expect(Self.message(G.model(nodes: [relu], inputs: [G.value("x", [2]), G.value("x", [2])],
                                     outputs: [G.value("y", [2])])) == "m.onnx: graph input 'x' is declared twice")
        #expect(Self.message(G.model(nodes: [relu], inputs: [G.value("x", [2])],
                                     outputs: [G.value("y", [2]), G.value("y", [2])])) == "m.onnx: graph output 'y' is declared twice")
        // Control: the same graph with one of each loads and runs.
        let model = try Model(data: G.model(nodes: [relu], inputs: [G.value("x", [2])], outputs: [G.value("y", [2])]),
                              computeUnits: .cpuOnly)
        #expect(try model.predict(inputs: ["x": Tensor(shape: [2], values: [-1, 3])])["y"]?.values == [0, 3])
    }

    @Test func valueNamesAreDefinedOnce() throws {
        let x = [G.value("x", [2])], y = [G.value("y", [2])]
        let cases: [(Data, String)] = [
            (G.model(nodes: [ONNXBytes.node("Relu", outputs: ["y"], name: "a"), ONNXBytes.node("Neg", outputs: ["y"], name: "b")],
                     inputs: x, outputs: y), "node 'b' (Neg) writes 'y' and so does node 'a' (Relu)"),
            (G.model(nodes: [ONNXBytes.node("Relu", outputs: ["x"], name: "a")], inputs: x, outputs: x),
             "node 'a' (Relu) writes 'x', which is a graph input"),
            (G.model(nodes: [ONNXBytes.node("Relu", outputs: ["w"], name: "a"), ONNXBytes.node("Add", inputs: ["x", "w"], name: "b")],
                     inputs: x, outputs: y, initializers: [Self.weight("w", [2], [1, 2])]),
             "node 'a' (Relu) writes 'w', which is an initializer"),
            (G.model(nodes: [ONNXBytes.node("Relu", inputs: ["q"], name: "a")], inputs: x, outputs: y),
             "node 'a' (Relu) reads 'q', which no graph input, initializer or node makes"),
        ]
        for (data, expected) in cases {
            #expect(Self.message(data) == "m.onnx: " + expected)
        }
    }

    @Test func cyclesAreRefusedAndOtherOrdersSorted() throws {
        // a reads b's output and b reads a's: a cycle.
        let cycle = G.model(nodes: [ONNXBytes.node("Add", inputs: ["x", "t"], outputs: ["s"], name: "a"),
                                    ONNXBytes.node("Relu", inputs: ["s"], outputs: ["t"], name: "b"),
                                    ONNXBytes.node("Neg", inputs: ["s"], outputs: ["y"], name: "c")],
                            inputs: [G.value("x", [2])], outputs: [G.value("y", [2])])
        let text = try #require(Self.message(cycle))
        #expect(text.hasPrefix("m.onnx: node '") && text.hasSuffix("is on a cycle: it reads, through other nodes, a value it makes"))
        #expect(!text.contains("'c'"), "c only reads the cycle: \(text)")
        // Control: the nodes of y = -relu(x) listed out of order are sorted, as onnxruntime does.
        let reversed = G.model(nodes: [ONNXBytes.node("Neg", inputs: ["r"], outputs: ["y"], name: "neg"),
                                       ONNXBytes.node("Relu", inputs: ["x"], outputs: ["r"], name: "relu")],
                               inputs: [G.value("x", [3])], outputs: [G.value("y", [3])])
        let model = try Model(data: reversed, computeUnits: .cpuOnly)
        #expect(try model.predict(inputs: ["x": Tensor(shape: [3], values: [-2, 0, 5])])["y"]?.values == [0, 0, -5])
    }

    /// One extra input for each op the issue found ignoring it, and
    /// (`Add(x, x, c)`) the case that returned x + x.
    @Test func extraInputsAreRefusedNamingTheNode() throws {
        let image = [G.value("x", [1, 2, 2, 2])], out = [G.value("y", nil)]
        let w = Self.weight("w", [2, 2, 1, 1], [1, 0, 0, 1]), c = Self.weight("c", [2], [1, 1])
        let s = ONNXBytes.tensor("s", dims: [4], type: 7, PB.bytes(9, PB.littleEndian([Int64(1), 2, 2, 2])))
        let kernel = PB.string(1, "kernel_shape") + PB.int(8, 1) + PB.int(8, 1) + PB.int(20, 7)
        let cases: [(String, [String], [UInt8]?, [[UInt8]], Int, String)] = [
            ("Add", ["x", "x", "c"], nil, [c], 2, "2"),
            ("Conv", ["x", "w", "c", "c"], nil, [w, c], 3, "2 to 3"),
            ("MaxPool", ["x", "x"], kernel, [], 1, "1"),
            ("GlobalAveragePool", ["x", "x"], nil, [], 1, "1"),
            ("Softmax", ["x", "x"], nil, [], 1, "1"),
            ("Flatten", ["x", "x"], nil, [], 1, "1"),
            ("Reshape", ["x", "s", "s"], nil, [s], 2, "2"),
            ("BatchNormalization", ["x", "c", "c", "c", "c", "c"], nil, [c], 5, "5"),
            ("Identity", ["x", "x"], nil, [], 1, "1"),
            ("Pow", ["x", "c", "c"], nil, [c], 2, "2"),
            ("Clip", ["x", "c", "c", "c"], nil, [c], 3, "1 to 3"),
        ]
        for (op, inputs, attribute, initializers, valid, allowed) in cases {
            let attributes = attribute.map { [$0] } ?? []
            let bad = G.model(nodes: [ONNXBytes.node(op, inputs: inputs, name: "node", attributes: attributes)],
                              inputs: image, outputs: out, initializers: initializers)
            #expect(Self.message(bad) == "m.onnx: node 'node' (\(op)) lists \(inputs.count) inputs; \(op) at opset 17 takes \(allowed)")
            // Control: the node with the inputs its op takes gets past validation.
            let good = G.model(nodes: [ONNXBytes.node(op, inputs: Array(inputs.prefix(valid)), name: "node", attributes: attributes)],
                               inputs: image, outputs: out, initializers: initializers)
            #expect(Self.message(good)?.contains("lists") != true, "\(op): \(Self.message(good) ?? "loaded")")
        }
        // Add(x, x) is x + x (the control computed in Float).
        let add = try Model(data: G.model(nodes: [ONNXBytes.node("Add", inputs: ["x", "x"], name: "add")],
                                          inputs: [G.value("x", [2])], outputs: [G.value("y", [2])]), computeUnits: .cpuOnly)
        #expect(try add.predict(inputs: ["x": Tensor(shape: [2], values: [1.5, -4])])["y"]?.values == [3, -8])
        // Too many outputs: Relu makes one.
        #expect(Self.message(G.model(nodes: [ONNXBytes.node("Relu", outputs: ["y", "z"], name: "relu")],
                                     inputs: [G.value("x", [2])], outputs: [G.value("y", [2])]))
                == "m.onnx: node 'relu' (Relu) lists 2 outputs; Relu at opset 17 takes 1")
    }
}
