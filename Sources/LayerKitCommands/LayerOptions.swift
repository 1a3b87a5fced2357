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
        let type = try LayerRegistry.shared.layerType(named: try arguments.required("--op"))
        var parameters: [String: Any] = [:]
        var texts: [String] = []
        for text in arguments.values("--param") {
            let (key, value) = try ValueParsing.parameter(text)
            parameters[key] = value
            texts.append("\(key)=\(value.formatted())")
        }
        var blobs: [String: (String, Data)] = [:]
        for text in arguments.values("--weights") {
            let (key, path) = try ValueParsing.weights(text)
            guard type.weightNames.contains(key) else {
                let known = type.weightNames.isEmpty ? "none" : type.weightNames.joined(separator: ", ")
                throw LayerKitError.invalidWeights("\(type.name) has no weights named '\(key)' (known: \(known))")
            }
            blobs[key] = (path, try TensorFiles.weightData(path))
            texts.append("\(key)=\(URL(fileURLWithPath: path).lastPathComponent)")
        }
        let layer = try type.init(parameters: parameters)
        if !blobs.isEmpty {
            let missing = type.weightNames.filter { blobs[$0] == nil }
            guard missing.isEmpty else {
                throw LayerKitError.invalidWeights("\(type.name) also needs weights: \(missing.joined(separator: ", "))")
            }
            try layer.setWeightData(type.weightNames.compactMap { blobs[$0]?.1 })
        }
        self.layer = layer
        name = type.name
        weightFiles = blobs.values.map(\.0)
        parameterText = texts.isEmpty ? "defaults" : texts.joined(separator: ", ")
    }
}

extension Double {
    /// Shortest text for a parameter value (`0.5`, `1`, `1e-05`).
    func formatted() -> String {
        self == rounded() && abs(self) < 1e15 ? String(Int(self)) : String(self)
    }
}
