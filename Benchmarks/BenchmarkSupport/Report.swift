import Foundation
import LayerKitCommands

/// Prints `rows` as an aligned table, with one ratio column per baseline:
/// the baseline's median over each row's median (times faster than it).
package func printTable(_ rows: [BenchRow], baselines: [(label: String, name: String)]) {
    for line in formatTable(rows, baselines: baselines) { print(line) }
}

/// `rows` as one JSON object per line, for scripts.
package func printJSON(_ rows: [BenchRow]) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    for row in rows { print(String(decoding: try encoder.encode(row), as: UTF8.self)) }
}
