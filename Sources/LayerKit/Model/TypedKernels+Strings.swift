import Foundation
import LayerKitONNX

/// The string ops of the default domain, on string values in their own
/// type (`TypedStep` at run time, folding at load).
extension TypedKernels {
    /// StringConcat: each element of X followed by Y's, broadcast as numpy.
    static func stringConcat(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes([])
        let x = try input(0, inputs, node), y = try input(1, inputs, node)
        guard x.elementType == .string, y.elementType == .string else {
            throw node.error("concatenates strings, got \(x.elementType) and \(y.elementType)")
        }
        let broadcast = try Broadcast([x.shape, y.shape], node)
        return [try TypedTensor(shape: broadcast.shape, strings: broadcast.map(x.strings, y.strings, +))]
    }

    /// StringSplit: each element split at `delimiter` (Python's
    /// `str.split(delimiter, maxsplit)`: empty pieces kept), or without one
    /// at runs of whitespace (`str.split(None, maxsplit)`: none empty), at
    /// most `maxsplit` times. Y is X's shape plus the most pieces of an
    /// element, padded with empty strings; Z each element's count (int64).
    static func stringSplit(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["delimiter", "maxsplit"])
        let x = try input(0, inputs, node)
        guard x.elementType == .string else { throw node.error("splits strings, got \(x.elementType)") }
        let delimiter = try node.string("delimiter", default: "")
        let maxsplit = try node.int("maxsplit", default: Int.max)
        guard maxsplit >= 0 else { throw node.error("maxsplit \(maxsplit) is negative") }
        let pieces: [[String]] = x.strings.map { text in
            let parts = delimiter.isEmpty
                ? text.split(maxSplits: maxsplit, omittingEmptySubsequences: true, whereSeparator: \.isWhitespace)
                : text.split(separator: delimiter, maxSplits: maxsplit, omittingEmptySubsequences: false)
            return parts.map(String.init)
        }
        let width = pieces.map(\.count).max() ?? 0
        let shape = x.shape + [width]
        _ = try ONNXFolding.checkedCount(shape, node)
        let padded = pieces.flatMap { $0 + Array(repeating: "", count: width - $0.count) }
        return [try TypedTensor(shape: shape, strings: padded),
                try TypedTensor(.int64, shape: x.shape, integers: pieces.map { Int64($0.count) })]
    }

    /// StringNormalizer, as onnxruntime: the elements of a [C] or [1, C]
    /// input that are none of `stopwords` (compared lowercased unless
    /// `is_case_sensitive`), in order, changed to `case_change_action`'s case
    /// (Unicode's, whatever `locale` says); none left gives one empty string.
    static func stringNormalizer(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["case_change_action", "is_case_sensitive", "locale", "stopwords"])
        let x = try input(0, inputs, node)
        guard x.elementType == .string else { throw node.error("normalizes strings, got \(x.elementType)") }
        guard x.shape.count == 1 || (x.shape.count == 2 && x.shape[0] == 1) else {
            throw node.error("takes a [C] or [1, C] input, got \(Tensor.describe(x.shape))")
        }
        let action = try node.string("case_change_action", default: "NONE")
        let change: (String) -> String
        switch action {
        case "NONE": change = { $0 }
        case "LOWER": change = { $0.lowercased() }
        case "UPPER": change = { $0.uppercased() }
        default: throw node.error("case_change_action '\(action)' is not one of NONE, LOWER, UPPER")
        }
        let caseSensitive = try node.int("is_case_sensitive", default: 0) != 0
        let key: (String) -> String = caseSensitive ? { $0 } : { $0.lowercased() }
        let stopwords = Set((try node.node.strings("stopwords") ?? []).map(key))
        var kept = x.strings.filter { !stopwords.contains(key($0)) }.map(change)
        if kept.isEmpty { kept = [""] }
        return [try TypedTensor(shape: x.shape.count == 1 ? [kept.count] : [1, kept.count], strings: kept)]
    }
}
