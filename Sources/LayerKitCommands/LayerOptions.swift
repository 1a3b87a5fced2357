import Foundation
import LayerKit

/// The options that pick and configure layers: `--op NAME` or `--expr
/// FORMULA`, each followed by its own `--param k=v` and `--weights
/// k=FILE.npy` (repeatable). Several `--op`/`--expr` make a chain, run fused.
struct LayerOptions {
    static let valued: Set<String> = ["--op", "--expr", "--param", "--weights"]

    /// One `--op` or `--expr` with the options after it.
    private struct Stage {
        let option: String
        let value: String
        var parameters: [(String, String)] = []
        var weights: [(String, String)] = []
    }

    /// The layer to run: the op itself, or a `FusedLayer` of the chain.
    let layer: CustomLayer
    let name: String
    /// The weight files, so an output can be checked against them too.
    let weightFiles: [String]
    /// `beta=0.5, ...` for reports.
    let parameterText: String

    init(_ arguments: Arguments) throws {
        var stages: [Stage] = []
        for (option, value) in arguments.options {
            guard let value, LayerOptions.valued.contains(option) else { continue }
            switch option {
            case "--op", "--expr":
                stages.append(Stage(option: option, value: value))
            case "--param", "--weights":
                guard !stages.isEmpty else {
                    throw UsageError("\(option) \(value) comes before any --op or --expr; it applies to the op before it")
                }
                let pair = option == "--param" ? try ValueParsing.parameter(value) : try ValueParsing.weights(value)
                if option == "--param" { stages[stages.count - 1].parameters.append(pair) }
                else { stages[stages.count - 1].weights.append(pair) }
            default:
                continue
            }
        }
        guard !stages.isEmpty else { throw UsageError("missing --op NAME or --expr FORMULA") }
        let layers = try stages.map(LayerOptions.layer)
        if layers.count == 1 {
            layer = layers[0]
        } else {
            layer = try ValueParsing.onCommandLine { try FusedLayer(layers.map { layer in
                guard let elementwise = layer as? ElementwiseLayer else {
                    throw LayerKitError.unsupported("\(layer.layerName) is not a per-element op and cannot be fused")
                }
                return elementwise
            }) }
        }
        name = layer.layerName
        weightFiles = stages.flatMap { $0.weights.map(\.1) }
        let texts = stages.map { stage in
            (stage.parameters.map { "\($0.0)=\($0.1)" } + stage.weights.map { "\($0.0)=\(URL(fileURLWithPath: $0.1).lastPathComponent)" })
                .joined(separator: ", ")
        }
        parameterText = texts.allSatisfy(\.isEmpty) ? "defaults" : texts.map { $0.isEmpty ? "defaults" : $0 }
            .joined(separator: " | ")
    }

    /// The layer of one `--op` or `--expr` with its values.
    private static func layer(_ stage: Stage) throws -> CustomLayer {
        if stage.option == "--op" {
            // Names first: a misspelt weight name is the error to report, not its file.
            let entry = try ValueParsing.registeredOp(stage.value)
            for (key, _) in stage.weights where !entry.weightNames.contains(key) {
                let known = entry.weightNames.isEmpty ? "none" : entry.weightNames.joined(separator: ", ")
                throw UsageError("\(entry.name) has no weights named '\(key)'"
                                 + NameSuggestion.hint(for: key, among: entry.weightNames) + " (known: \(known))")
            }
        }
        var blobs: [String: Data] = [:]
        for (key, path) in stage.weights { blobs[key] = try TensorFiles.weightData(path) }
        if stage.option == "--expr" {
            var scalars: [String: Float] = [:]
            for (key, text) in stage.parameters {
                guard let value = Float(text), value.isFinite else {
                    throw UsageError("--param \(key)=\(text): not a finite number")
                }
                scalars[key] = value
            }
            let weightNames = stage.weights.map(\.0)
            let layer = try ValueParsing.onCommandLine {
                try FormulaLayer(formula: stage.value, parameters: scalars, weightNames: weightNames)
            }
            if !weightNames.isEmpty { try layer.setWeightData(layer.definition.weightNames.map { blobs[$0] ?? Data() }) }
            return layer
        }
        let entry = try ValueParsing.registeredOp(stage.value)
        let layer = try ValueParsing.onCommandLine { try entry.make(Dictionary(stage.parameters, uniquingKeysWith: { $1 })) }
        if !blobs.isEmpty {
            // One blob per weight name, in order; an empty blob for a name not given.
            try layer.setWeightData(entry.weightNames.map { blobs[$0] ?? Data() })
        }
        return layer
    }
}
