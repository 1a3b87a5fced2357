import Foundation
import Testing
@testable import LayerKitONNX
@testable import LayerKit

/// Unique, BitCast, TfIdfVectorizer and RegexFullMatch beyond the onnx node
/// tests and the onnxruntime cases (Fixtures/onnx-cases/text): the cases
/// that read strings (Fixtures/text-strings, written by
/// Scripts/onnx_cases/text.py from onnxruntime), values worked out by hand,
/// RE2's refusals, and hostile attributes as errors naming the node.
@Suite struct TextOpTests {
    typealias T = TypedIndexingKernelTests

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/text-strings")

    static let cases: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()

    @Test func everyStringCaseIsThere() { #expect(Self.cases.count >= 6, "\(Self.cases)") }

    @Test(arguments: cases) func stringCasesMatchOnnxruntime(_ name: String) throws {
        try MLStringModelTests.check(Self.directory.appendingPathComponent(name))
    }

    static func strings(_ values: [String]) throws -> TypedTensor { try TypedTensor(shape: [values.count], strings: values) }

    @Test func regexRefusesWhatRE2Lacks() throws {
        let x = try Self.strings(["aa", "ab"])
        for (pattern, what) in [("(a)\\1", "a backreference"), ("a(?=b)", "lookaround"), ("(?<!b)a", "lookaround"),
                                ("(?>a+)", "an atomic group"), ("a*+", "a possessive quantifier")] {
            let error = T.failure("RegexFullMatch", [x], opset: 20, ["pattern": .string(pattern)])
            #expect(error?.contains("pattern '\(pattern)' uses \(what), which RE2 (ONNX's regex syntax) does not have") == true,
                    "\(error ?? "no error")")
        }
        #expect(T.failure("RegexFullMatch", [x], opset: 20, ["pattern": .string("(a")])?
            .contains("pattern '(a' is not a valid regular expression") == true)
        // RE2 reads '[' inside a class as itself and the whole string must match: "a[" matches, "ab" does not.
        let matches = try T.run("RegexFullMatch", [try Self.strings(["a[", "ab", "[["])], opset: 20,
                                ["pattern": .string("[a[]+")])[0]
        #expect(matches.integers() == [1, 0, 1])
    }

    @Test func uniqueOfNothingAndBitCastOfNibbles() throws {
        let empty = try T.run("Unique", [try T.float([0], [])], opset: 11)
        #expect(empty.map(\.shape) == [[0], [0], [0], [0]])
        // int4 -1 is the nibble 1111: uint4 15, and back.
        let nibbles = try T.run("BitCast", [try TypedTensor(.int4, shape: [2], integers: [-1, 7])], opset: 26,
                                ["to": .int(Int(ElementType.uint4.rawValue))])[0]
        #expect(nibbles.elementType == .uint4 && nibbles.integers() == [15, 7])
        let back = try T.run("BitCast", [nibbles], opset: 26, ["to": .int(Int(ElementType.int4.rawValue))])[0]
        #expect(back.integers() == [-1, 7])
    }

    @Test func hostileAttributesAreErrorsNamingTheNode() throws {
        let tokens = try T.int64([3], [1, 2, 3])
        let pool: [String: ONNXAttribute] = ["mode": .string("TF"), "min_gram_length": .int(1), "max_gram_length": .int(1),
                                             "pool_int64s": .ints([1, 2]), "ngram_counts": .ints([0]), "ngram_indexes": .ints([0, 1])]
        let cases: [(String?, String)] = [
            (T.failure("TfIdfVectorizer", [tokens], opset: 9, pool.merging(["pool_strings": .strings(["a"])]) { $1 }),
             "node 'n' (TfIdfVectorizer): takes exactly one of pool_strings and pool_int64s"),
            (T.failure("TfIdfVectorizer", [tokens], opset: 9, pool.merging(["mode": .string("BM25")]) { $1 }),
             "mode 'BM25' is not TF, IDF or TFIDF"),
            (T.failure("TfIdfVectorizer", [tokens], opset: 9, pool.merging(["weights": .floats([1])]) { $1 }),
             "weights holds 1 values for the 2 n-grams of ngram_indexes"),
            (T.failure("TfIdfVectorizer", [tokens], opset: 9, pool.merging(["ngram_indexes": .ints([0, -4])]) { $1 }),
             "ngram_indexes [0, -4] must be indices >= 0"),
            (T.failure("TfIdfVectorizer", [try Self.strings(["a"])], opset: 9, pool),
             "X is string: strings take pool_strings"),
            (T.failure("BitCast", [tokens], opset: 26, ["to": .int(Int(ElementType.int32.rawValue))]),
             "int64 (64 bits) and int32 (32 bits) differ in width"),
            (T.failure("BitCast", [try Self.strings(["a"])], opset: 26, ["to": .int(Int(ElementType.int8.rawValue))]),
             "casts the bits of non-string types"),
            (T.failure("Unique", [tokens], opset: 11, ["axis": .int(3)]), "axis 3"),
        ]
        for (error, expected) in cases {
            #expect(error?.contains(expected) == true, "\(error ?? "no error")")
        }
    }
}
