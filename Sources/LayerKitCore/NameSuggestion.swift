/// "Did you mean" for names a user typed: the closest known name by edit
/// distance (insertions, deletions, substitutions and swaps of neighbours,
/// letter case ignored), when it is close enough to be a typo.
package enum NameSuggestion {
    /// The known name nearest `word`, if at most about a third of its letters differ.
    package static func closest(to word: String, among names: [String]) -> String? {
        let typed = Array(word.lowercased())
        let limit = max(1, typed.count / 3)
        var best: (name: String, distance: Int)?
        for name in names {
            let distance = self.distance(typed, Array(name.lowercased()))
            if distance <= limit, distance < (best?.distance ?? .max) { best = (name, distance) }
        }
        return best?.name
    }

    /// ` (did you mean 'NAME'?)`, or nothing without a close name.
    package static func hint(for word: String, among names: [String]) -> String {
        closest(to: word, among: names).map { " (did you mean '\($0)'?)" } ?? ""
    }

    /// The optimal-string-alignment distance between `a` and `b`.
    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}
