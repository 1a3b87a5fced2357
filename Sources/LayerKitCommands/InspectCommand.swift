import Foundation
import LayerKit

/// `layerkit inspect model.onnx`: the model's inputs and outputs (symbolic
/// dimensions by name), IR version and opsets, its parameter count and
/// weight size, and every node with the backend it runs on, like
/// TensorFlow Lite's input and output details. A model LayerKit cannot run
/// yet is listed all the same: every node with what became of it, then
/// every reason a node is refused with its count; the exit status is then 1.
enum InspectCommand {
    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, command: .inspect)
        let path = try ModelFiles.modelPath(arguments)
        let units = try ValueParsing.backend(arguments.value("--backend") ?? "auto")
        let layers = arguments.values("--layer")
        // Loading folds constant subgraphs by evaluating their layers: on --threads.
        let threads = try arguments.threads()
        let survey = try ModelSurvey.of(contentsOf: URL(fileURLWithPath: path), registry: ModelFiles.registry(layers))
        let model = survey.canRun
            ? try ModelFiles.load(path, computeUnits: units, threads: threads, layers: layers, console: console) : nil
        if arguments.has("--json") {
            console.print(try JSONText.line(InfoRecords.Inspect(survey, model: model, path: path)))
            return model == nil ? 1 : 0
        }
        console.print("model: \(path) (ONNX IR \(survey.irVersion)"
                      + (survey.producer.isEmpty ? ")" : ", produced by \(survey.producer))"))
        console.print("opsets: " + survey.opsets.map { "\($0.domain.isEmpty ? "ai.onnx" : $0.domain) \($0.version)" }
            .joined(separator: ", "))
        console.print("parameters: \(survey.parameterCount) (\(byteText(survey.weightBytes)) of weights)")
        if let model { console.print(ModelFiles.deviceLine(model.backend)) }
        for (title, values) in [("inputs", survey.inputs), ("outputs", model?.outputs ?? survey.outputs)] {
            console.print("\(title):")
            let rows = values.map { [$0.name, $0.dataType?.onnxName ?? "untyped", $0.dimensions.map(\.description).joined(separator: "x")] }
            TextTable.lines(header: ["name", "dtype", "shape"], rows: rows).forEach { console.print("  " + $0) }
        }
        if let model, !model.nodes.isEmpty {
            printPlacements(model, console: console)
            for finding in model.halfRangeFindings { console.print(ModelParity.warning(finding)) }
            return 0
        }
        console.print("nodes (\(survey.nodes.count)):")
        let rows = survey.nodes.enumerated().map { i, node -> [String] in
            [String(i), node.name, node.domain.isEmpty ? node.opType : "\(node.domain).\(node.opType)", describe(node.status)]
        }
        TextTable.lines(header: ["#", "name", "op", "status"], rows: rows).forEach { console.print("  " + $0) }
        if model != nil {
            // It loaded: its plan waits for the values of the inputs some node needs at prepare, or it has no layer.
            let inputs = Set(survey.nodes.compactMap { node -> String? in
                if case .perValue(let input) = node.status { input } else { nil }
            }).sorted().map { "'\($0)'" }
            console.print(inputs.isEmpty ? "runs: every output is computed at load (the whole graph folds to constants)"
                          : "runs: the plan is made from the values of \(inputs.joined(separator: ", ")) at each new value; "
                          + "`layerkit run` with them shows where each node runs")
            return 0
        }
        let unsupported = survey.unsupported
        let refused = unsupported.reduce(0) { $0 + $1.count }
        let blocked = survey.nodes.filter { if case .blocked = $0.status { true } else { false } }.count
        console.print("cannot run: \(refused) node\(refused == 1 ? "" : "s") refused for \(unsupported.count) "
                      + "reason\(unsupported.count == 1 ? "" : "s")" + (blocked > 0 ? ", \(blocked) not reached after them:" : ":"))
        TextTable.lines(header: ["nodes", "reason"], rows: unsupported.map { [String($0.count), $0.reason] })
            .forEach { console.print("  " + $0) }
        for opType in Set(unsupported.compactMap { LayerRegistry.missingLayer(in: $0.reason) }).sorted() {
            console.print("  \(opType): \(ModelFiles.layerHint(opType))")
        }
        return 1
    }

    /// Every node with where it runs, and why a node runs on the CPU, once
    /// per distinct reason, as a footnote.
    private static func printPlacements(_ model: Model, console: Console) {
        let nodes = model.nodes
        console.print("nodes (\(nodes.count)):")
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
    }

    static func describe(_ status: ModelSurvey.Status) -> String {
        switch status {
        case .runs: "runs"
        case .folded: "folded at load"
        case .unsupported(let why): "REFUSED: " + ModelSurvey.shortened(why)
        case .blocked(let value): "not reached (reads '\(value)')"
        case .perValue(let input): "runs, planned per value of '\(input)'"
        }
    }

    /// `46.8 MB`, `512 B`: decimal units, as file sizes are shown.
    static func byteText(_ bytes: Int) -> String {
        switch bytes {
        case ..<1000: "\(bytes) B"
        case ..<1_000_000: String(format: "%.1f kB", Double(bytes) / 1e3)
        case ..<1_000_000_000: String(format: "%.1f MB", Double(bytes) / 1e6)
        default: String(format: "%.2f GB", Double(bytes) / 1e9)
        }
    }
}
