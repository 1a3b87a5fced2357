import Foundation
import LayerKit

/// `layerkit ops [NAME] [--markdown]`: the registered ops with their
/// parameters, weights, formula and backends, within 100 columns (or one op
/// in detail); `--markdown` prints Docs/OPS.md's table. `--onnx` lists the
/// standard ONNX ops instead, with the element types LayerKit computes each in.
enum OpsCommand {
    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, command: .ops)
        if arguments.has("--onnx") {
            guard arguments.positional.isEmpty, !arguments.has("--json") else {
                throw UsageError("--onnx lists every ONNX op, as text or --markdown")
            }
            onnx(markdown: arguments.has("--markdown"), console: console)
            return 0
        }
        if let name = arguments.positional.first {
            guard !arguments.has("--markdown"), !arguments.has("--json") else {
                throw UsageError("--markdown and --json list every op: drop \(name)")
            }
            let entry = try ValueParsing.registeredOp(name)
            detail(try row(entry), console: console)
            return 0
        }
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
            // Within 100 columns: each op's formula on its own line(s) under its row.
            let table = TextTable.lines(header: ["op", "parameters (defaults)", "per-channel weights", "CPU", "GPU"],
                                        rows: rows.map { [$0[0], $0[1], $0[2], $0[4], $0[5]] })
            table.prefix(2).forEach { console.print($0) }
            for (line, row) in zip(table.dropFirst(2), rows) {
                console.print(line)
                CommandHelp.wrap(row[3], after: "    y =", column: 8, width: maximumWidth).forEach { console.print($0) }
            }
            console.print("(layerkit ops NAME: one op in detail)")
        }
        return 0
    }

    /// `ops --onnx`: each standard ONNX op, the versions LayerKit implements
    /// and the element types it computes the op in; within 100 columns, the
    /// types on their own line(s) under the op.
    private static func onnx(markdown: Bool, console: Console) {
        let ops = ONNXOpSummary.all
        if markdown {
            console.print("| ONNX op | versions | element types LayerKit computes |")
            console.print("| --- | --- | --- |")
            for op in ops { console.print("| \(op.name) | 1 to \(op.implemented) | \(op.types) |") }
            return
        }
        let table = TextTable.lines(header: ["ONNX op", "versions"], rows: ops.map { [$0.name, "1 to \($0.implemented)"] })
        table.prefix(2).forEach { console.print($0) }
        for (line, op) in zip(table.dropFirst(2), ops) {
            console.print(line)
            CommandHelp.wrap(op.types, after: "    types:", column: 15, width: maximumWidth).forEach { console.print($0) }
        }
    }

    /// The widest line `ops` prints.
    static let maximumWidth = 100

    /// `ops NAME`: one op's row as labelled lines.
    private static func detail(_ row: [String], console: Console) {
        let labels = ["op", "parameters (defaults)", "per-channel weights", "formula", "CPU evaluator", "GPU kernel"]
        for (label, value) in zip(labels, row) {
            let text = label == "formula" && value != "-" && !value.contains(":") ? "y = " + value : value
            CommandHelp.wrap(text, after: label + ":", column: 23, width: maximumWidth).forEach { console.print($0) }
        }
        let example = row[1] == "-" || row[1] == "(custom layer)" ? "" : " --param " + row[1].split(separator: ",")[0].split(separator: "|")[0]
        console.print("example:".padding(toLength: 23, withPad: " ", startingAt: 0)
                      + "layerkit apply --op \(row[0])\(example) --input x.npy --output y.npy")
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
