import LayerKitONNX

/// TfIdfVectorizer: counts of a pool's n-grams in rows of tokens (strings
/// or integers), as onnxruntime and ONNX's reference count them.
extension TypedKernels {
    /// TfIdfVectorizer-9: per row of X ([C] or [N, C], int32, int64 or
    /// strings), how often each n-gram of the pool (`pool_strings` or
    /// `pool_int64s`, its n-grams of each length starting at
    /// `ngram_counts`) of `min_gram_length` to `max_gram_length` tokens
    /// appears, its tokens 1 to `max_skip_count` + 1 apart (a 1-gram counted
    /// once), at the output position `ngram_indexes` gives it. "TF" gives
    /// the counts, "IDF" the n-gram's weight (`weights`, one per n-gram of
    /// the pool as onnxruntime reads them, default ones) where its count is
    /// not zero, "TFIDF" counts times weights; float32.
    static func tfIdfVectorizer(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["max_gram_length", "max_skip_count", "min_gram_length", "mode", "ngram_counts",
                                    "ngram_indexes", "pool_int64s", "pool_strings", "weights"])
        let x = try input(0, inputs, node)
        guard x.shape.count <= 2, x.shape.count < 2 || x.shape[0] >= 1 else {
            throw node.error("X must be [C] or [N, C] with N >= 1, got \(Tensor.describe(x.shape))")
        }
        let vectorizer = try NgramPool(node)
        let (rows, columns) = x.shape.count == 2 ? (x.shape[0], x.shape[1]) : (1, x.count)
        var counts = [Int](repeating: 0, count: try ONNXFolding.checkedCount([rows, vectorizer.outputSize], node))
        switch (x.elementType, vectorizer.strings) {
        case (.string, .some(let pool)):
            try vectorizer.count(x.strings, pool: pool, rows: rows, columns: columns, into: &counts, node)
        case (.int32, nil), (.int64, nil):
            try vectorizer.count(x.integers(), pool: try node.node.ints("pool_int64s").map { $0.map(Int64.init) } ?? [],
                                 rows: rows, columns: columns, into: &counts, node)
        default:
            throw node.error("X is \(x.elementType): strings take pool_strings, int32 and int64 pool_int64s")
        }
        let values = counts.enumerated().map { i, count in vectorizer.weigh(count, at: i % vectorizer.outputSize) }
        let shape = x.shape.count == 2 ? [rows, vectorizer.outputSize] : [vectorizer.outputSize]
        return [try TypedTensor(.float32, shape: shape, doubles: values)]
    }
}

/// TfIdfVectorizer's attributes, checked.
private struct NgramPool {
    let minLength: Int
    let maxLength: Int
    let maxSkip: Int
    let starts: [Int]
    let indexes: [Int]
    let outputSize: Int
    let mode: String
    /// Per output position, the weight of its n-gram.
    let weights: [Double]?
    let strings: [String]?

    init(_ node: ONNXNodeContext) throws {
        minLength = try node.int("min_gram_length", default: 0)
        maxLength = try node.int("max_gram_length", default: 0)
        maxSkip = try node.int("max_skip_count", default: 0)
        mode = try node.string("mode", default: "")
        starts = try node.ints("ngram_counts") ?? []
        indexes = try node.ints("ngram_indexes") ?? []
        let given = try node.node.floats("weights").flatMap { $0.isEmpty ? nil : $0 }
        strings = try node.node.strings("pool_strings")
        guard ["TF", "IDF", "TFIDF"].contains(mode) else { throw node.error("mode '\(mode)' is not TF, IDF or TFIDF") }
        guard minLength >= 1, minLength <= maxLength, (0...ONNXNodeContext.maxWindowValue).contains(maxSkip) else {
            throw node.error("min_gram_length \(minLength), max_gram_length \(maxLength) and max_skip_count \(maxSkip) "
                             + "must satisfy 1 <= min <= max and 0 <= skips")
        }
        guard let largest = indexes.max(), indexes.allSatisfy({ $0 >= 0 }), largest < ONNXImporter.maxValueElements else {
            throw node.error("ngram_indexes \(indexes) must be indices >= 0, at least one")
        }
        outputSize = largest + 1
        if let given, given.count != indexes.count {
            throw node.error("weights holds \(given.count) values for the \(indexes.count) n-grams of ngram_indexes")
        }
        var byPosition: [Double]?
        if let given {
            byPosition = [Double](repeating: 0, count: outputSize)
            for (id, position) in indexes.enumerated() { byPosition?[position] = Double(given[id]) }
        }
        weights = byPosition
        if (strings == nil) == (try node.ints("pool_int64s") == nil) {
            throw node.error("takes exactly one of pool_strings and pool_int64s")
        }
    }

    /// The n-grams of `pool` of the lengths counted, each to its output position.
    private func grams<T: Hashable>(_ pool: [T], _ node: ONNXNodeContext) throws -> [[T]: Int] {
        var grams: [[T]: Int] = [:], id = 0
        for (k, start) in starts.enumerated() {
            let (length, end) = (k + 1, k + 1 < starts.count ? starts[k + 1] : pool.count)
            guard start >= 0, start <= end, end <= pool.count else {
                throw node.error("ngram_counts \(starts) must rise within the pool's \(pool.count) items")
            }
            for at in stride(from: start, to: end - length + 1, by: length) {
                guard id < indexes.count else { throw node.error("the pool holds more n-grams than ngram_indexes' \(indexes.count)") }
                if (minLength...maxLength).contains(length) { grams[Array(pool[at..<(at + length)])] = indexes[id] }
                id += 1
            }
        }
        return grams
    }

    /// Adds each row's n-gram counts to `counts` ([rows, outputSize]).
    func count<T: Hashable>(_ tokens: [T], pool: [T], rows: Int, columns: Int, into counts: inout [Int],
                            _ node: ONNXNodeContext) throws {
        let grams = try grams(pool, node)
        guard !grams.isEmpty else { return }
        for row in 0..<rows {
            let tokensOfRow = tokens[(row * columns)..<((row + 1) * columns)]
            for distance in 1...(maxSkip + 1) {
                // 1-grams have no gaps: counted at the first distance only.
                let shortest = distance == 1 ? minLength : max(minLength, 2)
                guard shortest <= maxLength else { break }
                for start in tokensOfRow.indices {
                    var (gram, at) = ([T](), start)
                    while at < tokensOfRow.endIndex, gram.count < maxLength {
                        gram.append(tokensOfRow[at])
                        if gram.count >= shortest, let position = grams[gram] { counts[row * outputSize + position] += 1 }
                        at += distance
                    }
                }
            }
        }
    }

    /// The output at `position` of a row for its n-gram's `count`.
    func weigh(_ count: Int, at position: Int) -> Double {
        let weight = weights?[position] ?? 1
        switch mode {
        case "IDF": return count > 0 ? weight : 0
        case "TFIDF": return weight * Double(count)
        default: return Double(count)
        }
    }
}
