import Foundation
import Testing
@testable import LayerKitONNX
@testable import LayerKit

/// The typed kernels of StringConcat, StringSplit and StringNormalizer on
/// values worked out by hand from Python's `str` methods and onnxruntime's
/// rules (the onnx package's node tests cover the spec's examples), and the
/// errors hostile inputs and attributes meet.
@Suite struct TypedStringKernelTests {
    typealias K = TypedIndexingKernelTests

    static func strings(_ shape: [Int], _ values: [String]) throws -> TypedTensor { try TypedTensor(shape: shape, strings: values) }

    @Test func stringSplitFollowsPythonsSplit() throws {
        // "a,,b".split(",", 1) == ["a", ",b"]; "".split(",") == [""]; "  x  y ".split() == ["x", "y"].
        let byComma = try K.run("StringSplit", [Self.strings([2], ["a,,b", ""])], ["delimiter": .string(","), "maxsplit": .int(1)])
        #expect(byComma[0].shape == [2, 2] && byComma[0].strings == ["a", ",b", "", ""])
        #expect(byComma[1].integers() == [2, 1])
        let bySpace = try K.run("StringSplit", [Self.strings([2], ["  x  y ", ""])])
        #expect(bySpace[0].shape == [2, 2] && bySpace[0].strings == ["x", "y", "", ""] && bySpace[1].integers() == [2, 0])
    }

    @Test func stringNormalizerDropsStopwordsThenChangesCase() throws {
        let x = try Self.strings([1, 4], ["Monday", "tuesday", "MONDAY", "wednesday"])
        let y = try K.run("StringNormalizer", [x], ["stopwords": .strings(["monday"]), "case_change_action": .string("UPPER")])
        #expect(y[0].shape == [1, 2] && y[0].strings == ["TUESDAY", "WEDNESDAY"])
        let sensitive = try K.run("StringNormalizer", [x], ["stopwords": .strings(["monday"]), "is_case_sensitive": .int(1)])
        #expect(sensitive[0].strings == ["Monday", "tuesday", "MONDAY", "wednesday"])
        let none = try K.run("StringNormalizer", [Self.strings([1], ["monday"])], ["stopwords": .strings(["Monday"])])
        #expect(none[0].shape == [1] && none[0].strings == [""])
    }

    @Test func badStringInputsAndAttributesNameTheNode() throws {
        let x = try Self.strings([2], ["a", "b"])
        #expect(K.failure("StringConcat", try [x, K.int64([2], [1, 2])])?.contains("node 'n' (StringConcat): concatenates strings") == true)
        #expect(K.failure("StringConcat", try [x, Self.strings([3], ["a", "b", "c"])])?.contains("do not broadcast") == true)
        #expect(K.failure("StringSplit", [x], ["maxsplit": .int(-1)])?.contains("maxsplit -1 is negative") == true)
        #expect(K.failure("StringNormalizer", try [Self.strings([1, 1, 2], ["a", "b"])])?.contains("[C] or [1, C]") == true)
        #expect(K.failure("StringNormalizer", [x], ["case_change_action": .string("TITLE")])?.contains("'TITLE'") == true)
    }
}
