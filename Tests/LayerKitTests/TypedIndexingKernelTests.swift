import Foundation
import Testing
@testable import LayerKitONNX
@testable import LayerKit

/// The typed kernels of GatherND, ScatterND, Compress, ReverseSequence,
/// TopK, Trilu, EyeLike and CumProd, on values worked out by hand (the ONNX
/// spec's examples where it gives one). int64 values past 2^53 must come
/// back exactly: the kernels move bits and compute in Int64, never in Double.
@Suite struct TypedIndexingKernelTests {
    /// 2^53 + 1, the first int64 a Double cannot hold.
    static let big: Int64 = (1 << 53) + 1

    /// `op`'s typed kernel on `inputs`, as folding calls it.
    static func run(_ op: String, _ inputs: [TypedTensor?], opset: Int = 28,
                    _ attributes: [String: ONNXAttribute] = [:]) throws -> [TypedTensor] {
        let node = ONNXNode(name: "n", opType: op, domain: "", inputs: inputs.indices.map { "i\($0)" }, outputs: ["y", "z"],
                            attributes: attributes)
        let context = ONNXNodeContext(node: node, opset: opset, inputShapes: inputs.map { $0?.shape },
                                      initializers: inputs.map { _ in nil })
        let outputs = try TypedKernels.outputs(of: context, inputs)
        return try #require(outputs)
    }

    static func int64(_ shape: [Int], _ values: [Int64]) throws -> TypedTensor { try TypedTensor(.int64, shape: shape, integers: values) }
    static func float(_ shape: [Int], _ values: [Double]) throws -> TypedTensor { try TypedTensor(.float32, shape: shape, doubles: values) }
    static func bools(_ values: [Bool]) throws -> TypedTensor {
        try TypedTensor(.bool, shape: [values.count], integers: values.map { $0 ? 1 : 0 })
    }

    /// The error message of running `op`, nil when it does not throw.
    static func failure(_ op: String, _ inputs: @autoclosure () throws -> [TypedTensor?], opset: Int = 28,
                        _ attributes: [String: ONNXAttribute] = [:]) -> String? {
        do { _ = try run(op, inputs(), opset: opset, attributes); return nil } catch { return "\(error)" }
    }

    // MARK: - GatherND

    @Test func gatherNDPicksElementsAndSlicesExactly() throws {
        let data = try Self.int64([2, 2], [Self.big, -Self.big, Int64.max, 5])
        let y = try Self.run("GatherND", [data, Self.int64([2, 2], [1, 0, 0, 1])])[0]
        #expect(y.shape == [2] && y.integers() == [Int64.max, -Self.big])
        // A tuple shorter than the rank picks a row; negative indices count from the end.
        let rows = try Self.run("GatherND", [data, Self.int64([1, 1], [-1])])[0]
        #expect(rows.shape == [1, 2] && rows.integers() == [Int64.max, 5])
    }

    @Test func gatherNDWithBatchDims() throws {
        // ONNX's example 5: data [[[0,1],[2,3]],[[4,5],[6,7]]], indices [[1],[0]], batch_dims 1.
        let data = try Self.float([2, 2, 2], [0, 1, 2, 3, 4, 5, 6, 7])
        let y = try Self.run("GatherND", [data, Self.int64([2, 1], [1, 0])], ["batch_dims": .int(1)])[0]
        #expect(y.shape == [2, 2] && y.doubles() == [2, 3, 4, 5])
    }

    @Test func gatherNDRefusesBadIndicesAndAttributes() throws {
        let data = try Self.int64([2, 2], [1, 2, 3, 4])
        #expect(Self.failure("GatherND", try [data, Self.int64([1, 2], [2, 0])])?.contains("out of range") == true)
        #expect(Self.failure("GatherND", try [data, Self.int64([1, 3], [0, 0, 0])])?.contains("do not fit") == true)
        #expect(Self.failure("GatherND", try [data, Self.int64([1, 1], [0])], ["batch_dims": .int(5)])?.contains("batch_dims") == true)
        #expect(Self.failure("GatherND", try [data, Self.int64([1, 1], [0])], ["bogus": .int(1)])?.contains("not supported") == true)
    }

    // MARK: - ScatterND

    @Test func scatterNDReplacesExactly() throws {
        // ONNX's example 1, then int64 values past 2^53.
        let data = try Self.int64([8], [1, 2, 3, 4, 5, 6, 7, 8])
        let y = try Self.run("ScatterND", [data, Self.int64([4, 1], [4, 3, 1, 7]), Self.int64([4], [9, 10, 11, 12])])[0]
        #expect(y.integers() == [1, 11, 3, 10, 9, 6, 7, 12])
        let big = try Self.run("ScatterND", [Self.int64([3], [0, 0, 0]), Self.int64([2, 1], [2, -3]),
                                             Self.int64([2], [Self.big, Int64.min])])[0]
        #expect(big.integers() == [Int64.min, 0, Self.big])
        // Slices of a float matrix.
        let rows = try Self.run("ScatterND", [Self.float([2, 2], [1, 2, 3, 4]), Self.int64([1, 1], [1]), Self.float([1, 2], [7, 8])])[0]
        #expect(rows.doubles() == [1, 2, 7, 8])
    }

    @Test func scatterNDReductions() throws {
        let indices = try Self.int64([2, 1], [0, 0])
        let updates = try Self.int64([2], [Self.big, 2])
        let data = try Self.int64([2], [1, 7])
        func reduce(_ name: String) throws -> [Int64] {
            try Self.run("ScatterND", [data, indices, updates], ["reduction": .string(name)])[0].integers()
        }
        #expect(try reduce("add") == [Self.big + 3, 7])
        #expect(try reduce("mul") == [2 * Self.big, 7])
        #expect(try reduce("max") == [Self.big, 7])
        #expect(try reduce("min") == [1, 7])
        let floats = try Self.run("ScatterND", [Self.float([2], [1, 7]), indices, Self.float([2], [0.5, 3])],
                                  ["reduction": .string("mul")])[0]
        #expect(floats.doubles() == [1.5, 7])
    }

    @Test func scatterNDRefusesWhatItCannotDo() throws {
        let data = try Self.int64([1], [Int64.max])
        let at = try Self.int64([1, 1], [0])
        #expect(Self.failure("ScatterND", try [data, at, Self.int64([1], [1])], ["reduction": .string("add")])?.contains("overflows") == true)
        #expect(Self.failure("ScatterND", try [data, at, Self.int64([1], [1])], ["reduction": .string("sub")])?.contains("reduction") == true)
        // max and min came with opset 18.
        #expect(Self.failure("ScatterND", try [data, at, Self.int64([1], [1])], opset: 16, ["reduction": .string("max")]) != nil)
        #expect(Self.failure("ScatterND", try [data, at, Self.int64([2], [1, 2])])?.contains("do not match") == true)
        #expect(Self.failure("ScatterND", try [data, Self.int64([1, 1], [1]), Self.int64([1], [1])])?.contains("out of range") == true)
    }

    // MARK: - Compress and ReverseSequence

    @Test func compressKeepsTheTrueSlices() throws {
        let data = try Self.int64([3, 2], [1, 2, 3, 4, 5, Self.big])
        let rows = try Self.run("Compress", [data, Self.bools([false, true, true])], ["axis": .int(0)])[0]
        #expect(rows.shape == [2, 2] && rows.integers() == [3, 4, 5, Self.big])
        let flat = try Self.run("Compress", [data, Self.bools([false, true, false, false, true])])[0]
        #expect(flat.shape == [2] && flat.integers() == [2, 5])
        // A shorter condition reads as false past its end.
        let column = try Self.run("Compress", [data, Self.bools([true])], ["axis": .int(-1)])[0]
        #expect(column.shape == [3, 1] && column.integers() == [1, 3, 5])
    }

    @Test func reverseSequenceReversesEachBatchEntrysPrefix() throws {
        // ONNX's example: time_axis 0, batch_axis 1, lengths [4, 3, 2, 1].
        let x = try Self.int64([4, 4], [0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15])
        let y = try Self.run("ReverseSequence", [x, Self.int64([4], [4, 3, 2, 1])])[0]
        #expect(y.integers() == [3, 6, 9, 12, 2, 5, 8, 13, 1, 4, 10, 14, 0, 7, 11, 15])
        // time_axis 1, batch_axis 0: rows are batch entries.
        let rows = try Self.run("ReverseSequence", [Self.int64([2, 3], [1, 2, 3, 4, 5, 6]), Self.int64([2], [3, 2])],
                                ["time_axis": .int(1), "batch_axis": .int(0)])[0]
        #expect(rows.integers() == [3, 2, 1, 5, 4, 6])
        #expect(Self.failure("ReverseSequence", try [x, Self.int64([4], [5, 1, 1, 1])])?.contains("sequence length 5") == true)
        #expect(Self.failure("ReverseSequence", try [x, Self.int64([4], [1, 1, 1, 1])], ["time_axis": .int(1)]) != nil)
    }

    // MARK: - TopK

    @Test func topKTakesTheLowerIndexOnTies() throws {
        let x = try Self.float([4], [3, 1, 3, 2])
        let largest = try Self.run("TopK", [x, Self.int64([1], [2])])
        #expect(largest[0].doubles() == [3, 3] && largest[1].integers() == [0, 2])
        let smallest = try Self.run("TopK", [x, Self.int64([1], [3])], ["largest": .int(0)])
        #expect(smallest[0].doubles() == [1, 2, 3] && smallest[1].integers() == [1, 3, 0])
        // Along axis 0 of a matrix: per column.
        let columns = try Self.run("TopK", [Self.float([2, 2], [1, 4, 3, 2]), Self.int64([1], [1])], ["axis": .int(0)])
        #expect(columns[0].shape == [1, 2] && columns[0].doubles() == [3, 4] && columns[1].integers() == [1, 0])
    }

    @Test func topKOfLargeIntegersIsExact() throws {
        let unsigned = try TypedTensor(.uint64, shape: [3], unsignedIntegers: [(1 << 63) + 5, 1, 1 << 63])
        let y = try Self.run("TopK", [unsigned, Self.int64([1], [2])])
        #expect(y[0].integers().map { UInt64(bitPattern: $0) } == [(1 << 63) + 5, 1 << 63] && y[1].integers() == [0, 2])
        let signed = try Self.run("TopK", [Self.int64([3], [Self.big, Self.big - 1, -Self.big]), Self.int64([1], [1])])
        #expect(signed[0].integers() == [Self.big])
        // TopK-1 takes k as an attribute.
        let first = try Self.run("TopK", [Self.float([3], [1, 5, 2])], opset: 1, ["k": .int(1)])
        #expect(first[0].doubles() == [5] && first[1].integers() == [1])
    }

    @Test func topKRefusesAKPastTheAxis() throws {
        #expect(Self.failure("TopK", try [Self.float([3], [1, 2, 3]), Self.int64([1], [4])])?.contains("K 4") == true)
        #expect(Self.failure("TopK", try [Self.float([3], [1, 2, 3]), Self.int64([1], [-1])])?.contains("K -1") == true)
    }

    // MARK: - Trilu and EyeLike

    @Test func triluKeepsATriangle() throws {
        let x = try Self.int64([3, 3], [1, 2, 3, 4, 5, 6, 7, 8, Self.big])
        #expect(try Self.run("Trilu", [x])[0].integers() == [1, 2, 3, 0, 5, 6, 0, 0, Self.big])
        let lower = try Self.run("Trilu", [x, Self.int64([], [-1])], ["upper": .int(0)])[0]
        #expect(lower.integers() == [0, 0, 0, 4, 0, 0, 7, 8, 0])
        // A k far past the matrix keeps nothing (upper) or everything (lower).
        #expect(try Self.run("Trilu", [x, Self.int64([], [Int64.max])])[0].integers() == Array(repeating: 0, count: 9))
        #expect(try Self.run("Trilu", [x, Self.int64([], [Int64.max])], ["upper": .int(0)])[0].integers() == x.integers())
    }

    @Test func eyeLikeSetsOneDiagonal() throws {
        let x = try TypedTensor(.int32, shape: [2, 3], integers: [9, 9, 9, 9, 9, 9])
        let y = try Self.run("EyeLike", [x], ["k": .int(1), "dtype": .int(ElementType.int64.rawValue)])[0]
        #expect(y.elementType == .int64 && y.integers() == [0, 1, 0, 0, 0, 1])
        let same = try Self.run("EyeLike", [Self.float([2, 2], [5, 5, 5, 5])])[0]
        #expect(same.elementType == .float32 && same.doubles() == [1, 0, 0, 1])
        #expect(Self.failure("EyeLike", [x], ["dtype": .int(99)])?.contains("dtype 99") == true)
        #expect(Self.failure("EyeLike", try [Self.float([2], [1, 1])])?.contains("2-D") == true)
    }

    // MARK: - CumProd

    @Test func cumProdRunsForwardBackwardAndExclusive() throws {
        let x = try Self.int64([4], [1, 2, 3, 4])
        let axis = try Self.int64([], [0])
        func scan(_ attributes: [String: ONNXAttribute]) throws -> [Int64] { try Self.run("CumProd", [x, axis], attributes)[0].integers() }
        #expect(try scan([:]) == [1, 2, 6, 24])
        #expect(try scan(["exclusive": .int(1)]) == [1, 1, 2, 6])
        #expect(try scan(["reverse": .int(1)]) == [24, 24, 12, 4])
        #expect(try scan(["reverse": .int(1), "exclusive": .int(1)]) == [24, 12, 4, 1])
        let rows = try Self.run("CumProd", [Self.float([2, 2], [1, 2, 3, 4]), Self.int64([], [-1])])[0]
        #expect(rows.doubles() == [1, 2, 3, 12])
        // Exact past 2^53, and an int64 overflow is an error.
        #expect(try Self.run("CumProd", [Self.int64([2], [Self.big, 1]), axis])[0].integers() == [Self.big, Self.big])
        #expect(Self.failure("CumProd", try [Self.int64([2], [1 << 62, 2]), axis])?.contains("CumProd overflows") == true)
    }

    // MARK: - On float values of a run

    /// TopK of a float value the model computes, by a constant K, runs as
    /// its kernel's float layer: planned once at load, not per input value.
    @Test func topKOfActivationsIsPlannedOnce() throws {
        let k = ONNXBytes.tensor("k", dims: [1], type: 7, PB.bytes(9, PB.littleEndian([Int64(2)])))
        let data = ModelGraphTests.model(nodes: [ONNXBytes.node("Relu", inputs: ["x"], outputs: ["r"], name: "relu"),
                                                 ONNXBytes.node("TopK", inputs: ["r", "k"], outputs: ["v", "i"], name: "topk")],
                                         inputs: [ModelGraphTests.value("x", [2, 3])],
                                         outputs: [ModelGraphTests.value("v", [2, 2]), ModelGraphTests.value("i", [2, 2], type: 7)],
                                         initializers: [k])
        let model = try Model(data: data, computeUnits: .cpuOnly)
        #expect(model.nodes.map(\.opType) == ["Relu", "TopK"])
        let y = try model.predict(typed: ["x": TypedTensor(Tensor(shape: [2, 3], values: [1, -5, 3, 2, 2, 0]))])
        #expect(y["v"]?.doubles() == [3, 1, 2, 2])
        #expect(y["i"]?.elementType == .int64 && y["i"]?.integers() == [2, 0, 0, 1])
    }
}
