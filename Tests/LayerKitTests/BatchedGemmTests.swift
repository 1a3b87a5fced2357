import Foundation
import Testing
@testable import LayerKit
import LayerKitONNX

/// A transformer's Linear layer (MatMul of a computed `[B, S, K]` by a
/// constant `[K, N]`, then Add of a constant bias) as one `BatchedGemm`
/// step. The fixtures `math/matmul_linear_*` check the values against
/// onnxruntime; these check what fixtures cannot: one fused layer across
/// sequence lengths, and the steps training keeps.
@Suite struct BatchedGemmTests {
    static let (k, n) = (12, 10)
    static let weights = (0..<(k * n)).map { Float(($0 * 7) % 11) * 0.125 - 0.625 }
    static let bias = (0..<n).map { Float($0) * 0.25 - 1 }

    /// x [1, S, K] · w + bias, S free.
    static let model: Data = {
        let nodes = [ONNXBytes.node("MatMul", inputs: ["x", "w"], outputs: ["p"], name: "linear"),
                     ONNXBytes.node("Add", inputs: ["p", "b"], outputs: ["y"], name: "bias")]
        func floats(_ name: String, _ dims: [Int64], _ values: [Float]) -> [UInt8] {
            ONNXBytes.tensor(name, dims: dims, type: 1, PB.bytes(9, PB.littleEndian(values.map(\.bitPattern))))
        }
        return ModelGraphTests.model(nodes: nodes, inputs: [ModelGraphTests.value("x", [1, "S", k])],
                                     outputs: [ModelGraphTests.value("y", [1, "S", n])],
                                     initializers: [floats("w", [Int64(k), Int64(n)], weights),
                                                    floats("b", [Int64(n)], bias)])
    }()

    /// The product in float64.
    static func reference(_ x: [Float], rows: Int) -> [Double] {
        (0..<(rows * n)).map { index in
            let (row, column) = index.quotientAndRemainder(dividingBy: n)
            return (0..<k).reduce(Double(bias[column])) { $0 + Double(x[row * k + $1]) * Double(weights[$1 * n + column]) }
        }
    }

    /// Sequence lengths 3, 6 and 17 make three plans from one fused layer,
    /// on the GPU as one step (lengths past a slice's four rows included).
    @Test(arguments: [ComputeUnits.cpuOnly, .gpu])
    func oneFusedLayerServesEverySequenceLength(_ units: ComputeUnits) throws {
        if units == .gpu, !TestGPU.isEnabled { return }
        let model = try Model(data: Self.model, computeUnits: units, notice: { _ in })
        var layers: [Layer] = []
        for length in [3, 6, 17] {
            // fp16-exact inputs, so the GPU's only error is its fp16 output.
            let x = (0..<(length * Self.k)).map { Float(($0 * 5) % 9) * 0.25 - 1 }
            let y = try #require(try model.predict(inputs: ["x": Tensor(shape: [1, length, Self.k], values: x)])["y"])
            #expect(y.shape == [1, length, Self.n])
            for (value, expected) in zip(y.values, Self.reference(x, rows: length)) {
                #expect(abs(Double(value) - expected) <= (units == .gpu ? 1e-3 : 1e-6) * max(1, abs(expected)),
                        "\(units) S=\(length): \(value) vs \(expected)")
            }
            let steps = try #require(model.planForTests?.graph.steps)
            #expect(steps.count == 1 && steps[0].opType == "MatMul+Add", "\(steps.map(\.opType))")
            layers.append(try #require(steps.first?.layer as? BatchedGemm))
            if units == .gpu { #expect(model.nodes.allSatisfy { $0.placement == .gpu }, "\(model.nodes.map(\.placement))") }
        }
        #expect(layers.allSatisfy { $0 === layers[0] })
    }

    /// GPT-2's Conv1D, Reshape to `[rows, K]`, Gemm, Reshape back (the
    /// `math/gemm_reshaped_*` fixtures; ONNXCaseTests holds their values to
    /// onnxruntime's on both backends), is one step named after the Gemm
    /// where the product works on rows alone, and three where it does not:
    /// C per row, or the product read twice.
    @Test func aReshapedGemmIsOneStepWhereItWorksOnRows() throws {
        let expected = ["gemm_reshaped_rank3": ["Gemm"], "gemm_reshaped_rank4_transb_alpha": ["Gemm"],
                        "gemm_reshaped_per_row_c": ["Reshape", "Gemm", "Reshape"],
                        "gemm_reshaped_two_readers": ["Reshape", "Gemm", "Reshape", "Relu"]]
        for (name, opTypes) in expected {
            let file = ONNXCaseTests.root.appendingPathComponent("math/\(name)/model.onnx")
            let model = try Model(contentsOf: file, computeUnits: .cpuOnly, notice: { _ in })
            #expect(model.nodes.map(\.opType) == opTypes, "\(name): \(model.nodes.map(\.opType))")
        }
    }

    /// Training backpropagates through each node, so its graph keeps the
    /// MatMul (B's gradient) and the Add as they are.
    @Test func trainingKeepsTheMatMulAndTheAdd() throws {
        var importer = try ONNXImporter(model: ONNXModel(data: Self.model), registry: LayerRegistry())
        importer.keepsEveryNode = true
        let graph = try importer.graph(inputShapes: ["x": [1, 4, Self.k]])
        #expect(graph.steps.map(\.opType) == ["MatMul", "Add"])
        #expect(graph.steps.first?.layer is MatMulLayer)
    }
}
