import LayerKitONNX
import Foundation

/// What LayerKit can make of a model without running it, node by node: the
/// report `layerkit inspect` prints. Unlike loading a `Model`, a survey does
/// not stop at the first node LayerKit cannot run: it names every one, with
/// how often each reason occurs, so a user sees how far a model is from
/// running. Nodes downstream of a refused one are listed as not reached;
/// nodes that need an input's value at prepare as planned per value.
public struct ModelSurvey: Sendable {
    /// What became of one node.
    public enum Status: Sendable, Equatable {
        /// It converts to a layer (or passes its input through).
        case runs
        /// It is computed at load (shape arithmetic, constants).
        case folded
        /// LayerKit refuses it: why.
        case unsupported(String)
        /// Not reached: it reads `value`, made (or read) by a refused node.
        case blocked(by: String)
        /// A known op that needs, at prepare, a value computed from input
        /// `input` (a reshape target, a Conv's weights): the plan is made from
        /// that input's values, at the first run with them (`Model`), so
        /// where it runs is known then.
        case perValue(of: String)
    }

    /// One node of the model, in topological order.
    public struct Node: Sendable {
        public let name: String
        public let opType: String
        public let domain: String
        public let status: Status
    }

    public let irVersion: Int
    public let producer: String
    public let opsets: [(domain: String, version: Int)]
    /// The inputs and outputs, symbolic dimensions by name.
    public let inputs: [Model.ValueDescription]
    public let outputs: [Model.ValueDescription]
    /// The elements and bytes of the initializers (the weights).
    public let parameterCount: Int
    public let weightBytes: Int
    public let nodes: [Node]

    /// Each distinct reason nodes cannot run, as `OpType: reason`, with how
    /// many nodes it stops, most frequent first.
    public var unsupported: [(reason: String, count: Int)] {
        // In order of first appearance, then stably by count.
        var reasons: [(reason: String, count: Int)] = []
        var position: [String: Int] = [:]
        for node in nodes {
            guard case .unsupported(let why) = node.status else { continue }
            let reason = "\(node.opType): \(ModelSurvey.shortened(why))"
            if let k = position[reason] { reasons[k].count += 1 } else {
                position[reason] = reasons.count
                reasons.append((reason, 1))
            }
        }
        return reasons.enumerated().sorted { ($0.element.count, -$0.offset) > ($1.element.count, -$1.offset) }.map(\.element)
    }

    /// Whether every node runs or folds (some, perhaps, once input values are given).
    public var canRun: Bool {
        nodes.allSatisfy {
            switch $0.status {
            case .runs, .folded, .perValue: true
            case .unsupported, .blocked: false
            }
        }
    }

    /// Surveys the ONNX model at `url` for its declared input shapes
    /// (symbolic dimensions 1). Throws only when the file itself cannot be
    /// read or decoded, or its graph is malformed.
    public static func of(contentsOf url: URL, registry: LayerRegistry = .shared) throws -> ModelSurvey {
        let model = try ModelFileFormat.read(url)
        let name = url.lastPathComponent
        do {
            let importer = try ONNXImporter(model: model, registry: registry)
            let graph = importer.model.graph
            let inputs = try graph.feedInputs.map { input in
                guard let dims = input.dims else {
                    throw LayerKitError.invalidModel("input '\(input.name)' has no shape: its rank cannot be resolved")
                }
                return Model.describe(input, dims)
            }
            var statuses = [Status](repeating: .runs, count: graph.nodes.count)
            _ = try importer.graph(inputShapes: Dictionary(inputs.map { ($0.name, $0.shapeWithSymbolsAsOne) },
                                                           uniquingKeysWith: { first, _ in first })) { position, outcome in
                switch outcome {
                case .converted: statuses[position] = .runs
                case .folded: statuses[position] = .folded
                case .unsupported(let why): statuses[position] = .unsupported(why)
                case .blocked(let value): statuses[position] = .blocked(by: value)
                case .perValue(let input): statuses[position] = .perValue(of: input)
                }
            }
            let nodes = graph.nodes.enumerated().map { position, node in
                Node(name: node.name.isEmpty ? "\(node.opType)_\(position)" : node.name, opType: node.opType,
                     domain: node.domain, status: statuses[position])
            }
            let weights = graph.initializers.values
            return ModelSurvey(irVersion: model.irVersion, producer: model.producerName,
                               opsets: model.opsetImports.map { ($0.domain, $0.version) }, inputs: inputs,
                               outputs: graph.outputs.map { Model.describe($0, $0.dims ?? []) },
                               parameterCount: weights.reduce(0) { $0 + ((try? $1.elementCount()) ?? 0) },
                               weightBytes: weights.reduce(0) { $0 + $1.byteCount }, nodes: nodes)
        } catch LayerKitError.invalidModel(let message) {
            throw LayerKitError.invalidModel("\(name): \(message)")
        }
    }

    /// A refusal without the node's label (the table names the node) and
    /// without the list of supported ops, so equal reasons group.
    public static func shortened(_ why: String) -> String {
        var text = why
        if let range = text.range(of: "): ") { text = String(text[range.upperBound...]) }
        if let range = text.range(of: " (supported: ") { text = String(text[..<range.lowerBound]) }
        return text
    }
}
