import Foundation
@testable import LayerKit
import Testing

/// Integer, bool and float64 values computed at run time (`TypedStep`): a
/// model's token ids and masks run through one plan whatever their values,
/// and an op whose output shape follows its input's values (NonZero) is
/// planned per value once a run shows it. References: onnxruntime's
/// outputs (Scripts/generate_typed_fixtures.py), and exact integer math.
struct TypedStepTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/typed/token_embedding")

    static func tensor(_ file: String) throws -> TypedTensor {
        let url = folder.appendingPathComponent(file)
        return try TypedTensor(tensorProto: [UInt8](Data(contentsOf: url)), source: url.path)
    }

    /// The batch's two rows swapped (the first axis, of extent 2).
    static func swappingRows(_ tensor: TypedTensor) throws -> TypedTensor {
        let half = tensor.bytes.count / 2
        return try TypedTensor(elementType: tensor.elementType, shape: tensor.shape,
                               bytes: Array(tensor.bytes[half...] + tensor.bytes[..<half]))
    }

    /// `output` is `reference`: exactly, but float values of a GPU run
    /// (stored in fp16) within the parity rule.
    static func agrees(_ output: TypedTensor?, _ reference: TypedTensor, gpu: Bool) -> Bool {
        guard let output, output.elementType == reference.elementType, output.shape == reference.shape else { return false }
        guard gpu, reference.elementType.isFloatingPoint else { return output == reference }
        return zip(output.doubles(), reference.doubles()).allSatisfy { abs($0 - $1) <= 2e-3 * max(1, abs($1)) }
    }

    /// Token ids and a mask: onnxruntime's outputs (exactly on the CPU), on
    /// both backends; other ids (the rows swapped) run through the same plan
    /// and give the reference's rows swapped.
    @Test(arguments: [ComputeUnits.cpuOnly, .gpu])
    func tokenIdsOfAnyValueShareOnePlan(units: ComputeUnits) throws {
        let model = try Model(contentsOf: Self.folder.appendingPathComponent("model.onnx"), computeUnits: units,
                              notice: { _ in })
        let plan = try #require(model.planForTests)
        let inputs = ["ids": try Self.tensor("input_0.pb"), "mask": try Self.tensor("input_1.pb")]
        let references = try (0..<4).map { try Self.tensor("output_\($0).pb") }
        let outputs = try model.predict(typed: inputs)
        for (output, reference) in zip(model.outputs, references) {
            #expect(Self.agrees(outputs[output.name], reference, gpu: units == .gpu), "\(output.name)")
        }
        let swapped = try model.predict(typed: inputs.mapValues(Self.swappingRows))
        for (output, reference) in zip(model.outputs, references) {
            #expect(Self.agrees(swapped[output.name], try Self.swappingRows(reference), gpu: units == .gpu),
                    "\(output.name), rows swapped")
        }
        #expect(model.planForTests === plan, "new ids made a new plan")
    }

    /// NonZero's output shape is its input's values: the first run shows
    /// the plan's shape does not hold, and the input is planned per value
    /// from then on; every run's indices are exact.
    @Test func anOutputShapedByValuesIsPlannedPerValue() throws {
        let data = ModelGraphTests.model(nodes: [ONNXBytes.node("NonZero", inputs: ["x"], outputs: ["y"], name: "nonzero")],
                                         inputs: [ModelGraphTests.value("x", [4], type: 7)],
                                         outputs: [ModelGraphTests.value("y", nil, type: 7)])
        let model = try Model(data: data, name: "nonzero.onnx", computeUnits: .cpuOnly, notice: { _ in })
        for values: [Int64] in [[0, 3, 0, 5], [1, 1, 1, 0], [0, 0, 0, 0], [0, 3, 0, 5]] {
            let y = try #require(try model.predict(typed: ["x": TypedTensor(.int64, shape: [4], integers: values)])["y"])
            let expected = values.indices.filter { values[$0] != 0 }.map(Int64.init)
            #expect(y.shape == [1, expected.count] && y.integers() == expected, "\(values)")
        }
    }
}
