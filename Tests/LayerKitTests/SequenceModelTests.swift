import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// Sequences and optionals (`TypedTensor.Container`) through `Model`:
/// small hand-built graphs whose references are their own inputs (a
/// SequenceAt gives back the tensor put there; a concatenation is the
/// inputs' elements in order), and the errors of positions outside a
/// sequence. The onnx package's node tests of every sequence and optional
/// op run through `Scripts/node-conformance`.
@Suite struct SequenceModelTests {
    /// A ValueInfoProto of a float tensor `name` of `dims`.
    static func tensorInput(_ name: String, type: Int64 = 1, dims: [Int64]) -> [UInt8] {
        PB.string(1, name) + PB.bytes(2, PB.bytes(1, PB.int(1, type) + PB.bytes(2, dims.flatMap { PB.bytes(1, PB.int(1, $0)) })))
    }

    /// A ValueInfoProto of a sequence of float tensors.
    static func sequenceInput(_ name: String) -> [UInt8] {
        PB.string(1, name) + PB.bytes(2, PB.bytes(4, PB.bytes(1, PB.bytes(1, PB.int(1, 1)))))
    }

    static func model(_ nodes: [[UInt8]], inputs: [[UInt8]], outputs: [String]) throws -> Model {
        let graph = ONNXBytes.graph(nodes: nodes, inputs: inputs, extra: outputs.flatMap { PB.bytes(12, PB.string(1, $0)) })
        return try Model(data: ONNXBytes.model(opsets: [("", 17)], graph: graph), computeUnits: .cpuOnly, notice: { _ in })
    }

    /// SequenceConstruct(x, y), then SequenceAt at the run's `idx`.
    static func constructAt() throws -> Model {
        try model([ONNXBytes.node("SequenceConstruct", inputs: ["x", "y"], outputs: ["s"], name: "construct"),
                   ONNXBytes.node("SequenceAt", inputs: ["s", "idx"], outputs: ["z"], name: "at")],
                  inputs: [tensorInput("x", dims: [2]), tensorInput("y", dims: [3]), tensorInput("idx", type: 7, dims: [])],
                  outputs: ["z"])
    }

    static func inputs(_ index: Int64) throws -> [String: TypedTensor] {
        ["x": try TypedTensor(.float32, shape: [2], doubles: [1, 2]), "y": try TypedTensor(.float32, shape: [3], doubles: [3, 4, 5]),
         "idx": try TypedTensor(.int64, shape: [], integers: [index])]
    }

    static func failure(_ run: () throws -> Any) -> String {
        do {
            _ = try run()
            return "ran"
        } catch {
            return "\(error)"
        }
    }

    @Test func sequenceAtCountsNegativePositionsFromTheBack() throws {
        let model = try Self.constructAt()
        for (index, expected) in [(0, [1.0, 2]), (1, [3, 4, 5]), (-1, [3, 4, 5]), (-2, [1, 2])] as [(Int64, [Double])] {
            let z = try #require(try model.predict(typed: Self.inputs(index))["z"])
            #expect(z.shape == [expected.count] && z.doubles() == expected, "position \(index): \(z)")
        }
    }

    @Test func aPositionOutsideTheSequenceIsAnErrorNamingIt() throws {
        let model = try Self.constructAt()
        for index: Int64 in [2, -3] {
            let message = Self.failure { try model.predict(typed: Self.inputs(index)) }
            #expect(message.contains("node 'at' (SequenceAt)") && message.contains("position \(index) is out of range "
                    + "for a sequence of 2 tensors (-2 to 1)"), "\(message)")
        }
    }

    @Test func sequenceAtOnAnEmptySequenceSaysItIsEmpty() throws {
        let model = try Self.model([ONNXBytes.node("SequenceEmpty", inputs: [], outputs: ["s"], name: "empty"),
                                    ONNXBytes.node("SequenceAt", inputs: ["s", "idx"], outputs: ["z"], name: "at")],
                                   inputs: [Self.tensorInput("idx", type: 7, dims: [])], outputs: ["z"])
        let message = Self.failure { try model.predict(typed: ["idx": try TypedTensor(.int64, shape: [], integers: [0])]) }
        #expect(message.contains("position 0 is out of range: the sequence is empty"), "\(message)")
    }

    /// A sequence input, concatenated along axis 0 and counted: the tensors' elements in order.
    @Test func aSequenceInputConcatenatesAndCounts() throws {
        let model = try Self.model([ONNXBytes.node("ConcatFromSequence", inputs: ["s"], outputs: ["c"], name: "concat",
                                                   attributes: [MLModelTests.int("axis", 0)]),
                                    ONNXBytes.node("SequenceLength", inputs: ["s"], outputs: ["n"], name: "length")],
                                   inputs: [Self.sequenceInput("s")], outputs: ["c", "n"])
        #expect(model.inputs[0].form == .sequence(.tensor(.float32)))
        let tensors = [try TypedTensor(.float32, shape: [1, 2], doubles: [1, 2]), try TypedTensor(.float32, shape: [2, 2], doubles: [3, 4, 5, 6])]
        let outputs = try model.predict(typed: ["s": try TypedTensor(sequence: tensors, elementType: .float32)])
        let c = try #require(outputs["c"]), n = try #require(outputs["n"])
        #expect(c.shape == [3, 2] && c.doubles() == [1, 2, 3, 4, 5, 6], "\(c)")
        #expect(n.elementType == .int64 && n.integers() == [2], "\(n)")
        let message = Self.failure { try model.predict(typed: ["s": tensors[0]]) }
        #expect(message.contains("input 's' is a tensor(float32); the model takes a sequence(tensor(float32))"), "\(message)")
        // Tensors of different ranks have no axis in common: an error naming the node and the shapes.
        let ragged = try TypedTensor(sequence: [tensors[0], try TypedTensor(.float32, shape: [2], doubles: [7, 8])], elementType: .float32)
        let refusal = Self.failure { try model.predict(typed: ["s": ragged]) }
        #expect(refusal.contains("node 'concat' (ConcatFromSequence)") && refusal.contains("different ranks: 1x2, 2"), "\(refusal)")
    }

    /// A sequence and an optional survive their files: the proto the CLI writes reads back equal.
    @Test func sequenceAndOptionalProtosReadBackEqual() throws {
        let tensors = [try TypedTensor(.int64, shape: [2], integers: [7, -1]), try TypedTensor(.int64, shape: [], integers: [3])]
        let sequence = try TypedTensor(sequence: tensors, elementType: .int64)
        let form = ValueForm.sequence(.tensor(.int64))
        #expect(try TypedTensor(containerProto: sequence.containerProto(name: "s"), form: form, source: "s") == sequence)
        let optional = TypedTensor(container: .optional(sequence), elementType: .int64)
        #expect(try TypedTensor(containerProto: optional.containerProto(name: "o"), form: .optional(form), source: "o") == optional)
        let empty = TypedTensor(container: .optional(nil), elementType: .int64)
        #expect(try TypedTensor(containerProto: empty.containerProto(name: "o"), form: .optional(form), source: "o") == empty)
    }
}
