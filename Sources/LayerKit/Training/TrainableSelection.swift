/// Which of a model's initializers training updates; every other one stays
/// as the file has it, bit for bit.
public enum TrainableSelection: Sendable, Equatable {
    /// These initializers, by name.
    case named([String])
    /// The weights of every custom layer (nodes outside the ONNX domains):
    /// Swish's per-channel beta in a `layerkit.Swish` node, for example.
    case customLayerWeights
    /// The parameters of the last `n` layers that have any (a fine-tune of
    /// a classifier's head).
    case lastLayers(Int)
    /// Every initializer a differentiable layer holds or reads.
    case all

    /// The initializer names this selects in `graph`, sorted; throws naming
    /// what cannot be trained and why.
    func names(in graph: TrainingGraph) throws -> [String] {
        let candidates = graph.trainableCandidates
        /// The initializers step `i` holds or reads as constants.
        func parameters(of i: Int) -> [String] {
            let read = graph.graph.steps[i].inputs.compactMap { graph.constantParameters[$0] }
            return Array(graph.heldParameters[i].values) + read
        }
        let steps = graph.graph.steps.indices.filter { graph.graph.steps[$0].layer != nil }
        let names: [String]
        switch self {
        case .all:
            names = candidates
        case .named(let requested):
            guard !requested.isEmpty else { throw LayerKitError.invalidParameter("no trainable parameter was named") }
            for name in requested where !candidates.contains(name) {
                throw Self.whyNot(name, graph)
            }
            names = requested
        case .customLayerWeights:
            names = steps.filter { !graph.nodes[$0].isStandard }.flatMap(parameters)
            guard !names.isEmpty else {
                throw LayerKitError.invalidParameter("the model has no custom layer with weights to train "
                                                     + "(trainable: \(Self.list(candidates)))")
            }
        case .lastLayers(let n):
            let withParameters = steps.filter { !parameters(of: $0).isEmpty }
            guard n >= 1, n <= withParameters.count else {
                throw LayerKitError.invalidParameter("cannot train the last \(n) layers: the model has "
                                                     + "\(withParameters.count) layers with parameters")
            }
            names = withParameters.suffix(n).flatMap(parameters)
        }
        return Array(Set(names)).sorted()
    }

    /// The error for an initializer that cannot be trained: unknown, or read only where there is no backward.
    private static func whyNot(_ name: String, _ graph: TrainingGraph) -> LayerKitError {
        let candidates = graph.trainableCandidates
        guard graph.initializerNames.contains(name) else {
            return .invalidParameter("unknown trainable '\(name)': the model has no initializer of that name"
                                     + NameSuggestion.hint(for: name, among: candidates)
                                     + " (trainable: \(list(candidates)))")
        }
        if let step = graph.nodes.indices.first(where: { graph.nodes[$0].inputs.contains(name) }) {
            return .invalidParameter("'\(name)' cannot be trained: node \(graph.label(step)) reads it and has no "
                                     + "backward pass for it (trainable: \(list(candidates)))")
        }
        return .invalidParameter("'\(name)' cannot be trained: it is folded into a constant at load "
                                 + "(only constants reach the nodes that read it)")
    }

    /// Up to 8 names, then how many more.
    static func list(_ names: [String]) -> String {
        names.isEmpty ? "none" : names.prefix(8).joined(separator: ", ") + (names.count > 8 ? ", ... (\(names.count))" : "")
    }
}
