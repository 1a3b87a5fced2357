import Foundation
import LayerKit

/// The options that pick and configure a layer: `--op NAME`,
/// `--param k=v` (repeatable), `--weights k=FILE.npy` (repeatable).
struct LayerOptions {
    static let valued: Set<String> = ["--op", "--param", "--weights"]

    let layer: CustomLayer
    let name: String
    /// The weight files, so an output can be checked against them too.
    let weightFiles: [String]
    /// `beta=0.5, ...` for reports.
    let parameterText: String

    init(_ arguments: Arguments) throws {
        let entry = try LayerRegistry.shared.entry(named: try arguments.required("--op"))
        var parameters: [String: Any] = [:]
        var texts: [String] = []
        for text in arguments.values("--param") {
            let (key, value) = try ValueParsing.parameter(text)
            parameters[key] = value
            texts.append("\(key)=\(value)")
        }
        var blobs: [String: (String, Data)] = [:]
        for text in arguments.values("--weights") {
            let (key, path) = try ValueParsing.weights(text)
            guard entry.weightNames.contains(key) else {
                let known = entry.weightNames.isEmpty ? "none" : entry.weightNames.joined(separator: ", ")
                throw LayerKitError.invalidWeights("\(entry.name) has no weights named '\(key)' (known: \(known))")
            }
            blobs[key] = (path, try TensorFiles.weightData(path))
            texts.append("\(key)=\(URL(fileURLWithPath: path).lastPathComponent)")
        }
        let layer = try entry.make(parameters)
        if !blobs.isEmpty {
            // One blob per weight name, in order; an empty blob for a name not given.
            try layer.setWeightData(entry.weightNames.map { blobs[$0]?.1 ?? Data() })
        }
        self.layer = layer
        name = entry.name
        weightFiles = blobs.values.map(\.0)
        parameterText = texts.isEmpty ? "defaults" : texts.joined(separator: ", ")
    }
}
