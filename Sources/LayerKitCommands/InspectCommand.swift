import Foundation
import LayerKit

/// `layerkit inspect model.onnx`: the model's inputs and outputs, opsets,
/// and every node with the backend it runs on, like TensorFlow Lite's
/// input and output details.
enum InspectCommand {
    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, command: .inspect)
        let path = try ModelFiles.modelPath(arguments)
        let units = try ValueParsing.backend(arguments.value("--backend") ?? "auto")
        let model = try ModelFiles.load(path, computeUnits: units, layers: arguments.values("--layer"),
                                        console: console)
        if arguments.has("--json") {
            console.print(try JSONText.line(InfoRecords.Inspect(model, path: path)))
            return 0
        }
        console.print("model: \(path) (ONNX IR \(model.irVersion)"
                      + (model.producer.isEmpty ? ")" : ", produced by \(model.producer))"))
        console.print("opsets: " + model.opsets.map { "\($0.domain.isEmpty ? "ai.onnx" : $0.domain) \($0.version)" }
            .joined(separator: ", "))
        console.print(ModelFiles.deviceLine(model.backend))
        for (title, values) in [("inputs", model.inputs), ("outputs", model.outputs)] {
            console.print("\(title):")
            let rows = values.map { [$0.name, $0.dataType?.onnxName ?? "untyped", $0.dimensions.map(\.description).joined(separator: "x")] }
            TextTable.lines(header: ["name", "dtype", "shape"], rows: rows).forEach { console.print("  " + $0) }
        }
        let nodes = model.nodes
        console.print("nodes (\(nodes.count)):")
        // Why a node runs on the CPU, once per distinct reason, as a footnote.
        var reasons: [String] = []
        let rows = nodes.enumerated().map { i, node -> [String] in
            var place = ModelFiles.describe(node)
            if let why = node.cpuReason {
                let known = reasons.firstIndex(of: why)
                if known == nil { reasons.append(why) }
                place = "CPU [\((known ?? reasons.count - 1) + 1)]"
            }
            return ["\(i)", node.name, node.domain.isEmpty ? node.opType : "\(node.domain).\(node.opType)",
                    node.outputShapes.map(Tensor.describe).joined(separator: ", "), place]
        }
        TextTable.lines(header: ["#", "name", "op", "output", "runs on"], rows: rows).forEach { console.print("  " + $0) }
        for (k, why) in reasons.enumerated() { console.print("  [\(k + 1)] \(why)") }
        return 0
    }
}
