import Foundation
import LayerKit

/// `layerkit ops [--markdown]`: the registered ops with their parameters,
/// weights, formula and backends; `--markdown` prints the README's table.
enum OpsCommand {
    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, valued: [], flags: ["--markdown", "--json"])
        if arguments.has("--json") {
            let ops = try LayerRegistry.shared.all.map(row).map { cells in
                InfoRecords.Ops.Op(name: cells[0], parameters: cells[1] == "-" || cells[1] == "(custom layer)" ? []
                                       : cells[1].components(separatedBy: ", "),
                                   weights: cells[2] == "-" || cells[2].isEmpty ? [] : cells[2].components(separatedBy: ", "),
                                   formula: cells[3] == "-" ? nil : cells[3], cpu: cells[4] == "yes", gpu: cells[5] == "yes")
            }
            console.print(try JSONText.line(InfoRecords.Ops(ops: ops)))
            return 0
        }
        let header = ["op", "parameters (defaults)", "per-channel weights", "formula", "CPU", "GPU"]
        let rows = try LayerRegistry.shared.all.map(row)
        if arguments.has("--markdown") {
            console.print("| " + header.joined(separator: " | ") + " |")
            console.print("|" + String(repeating: " --- |", count: header.count))
            for row in rows {
                let cells = row.enumerated().map { $0.offset == 3 ? "`\($0.element)`" : $0.element }
                console.print("| " + cells.map { $0.replacingOccurrences(of: "|", with: "\\|") }
                    .joined(separator: " | ") + " |")
            }
        } else {
            for line in TextTable.lines(header: header, rows: rows) { console.print(line) }
        }
        return 0
    }

    private static func row(_ entry: LayerRegistry.Entry) throws -> [String] {
        guard let definition = entry.definition else {
            let layer = try? entry.make([:])
            return [entry.name, "(custom layer)", entry.weightNames.joined(separator: ", "), "-", "yes",
                    layer?.hasGPUImplementation == true ? "yes" : "no"]
        }
        var parameters = definition.values.compactMap { value in
            value.defaultValue.map { "\(value.name)=\(Expr.literal($0))" }
        }
        var formula = definition.formula.description
        if let choice = definition.choice {
            parameters.append("\(choice.name)=" + choice.options.map(\.word).joined(separator: "|"))
            formula = choice.options.map { "\($0.word): \($0.formula)" }.joined(separator: "; ")
        }
        return [definition.name, parameters.isEmpty ? "-" : parameters.joined(separator: ", "),
                definition.weightNames.isEmpty ? "-" : definition.weightNames.joined(separator: ", "),
                formula, "yes", "yes"]
    }
}
