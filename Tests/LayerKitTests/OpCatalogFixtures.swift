import Foundation
@testable import LayerKit

/// The reference vectors of `Scripts/generate_op_references.py`
/// (onnxruntime outputs for every catalog op), read from
/// `Tests/LayerKitTests/Fixtures/ops/`.
struct OpReferenceCase: Sendable, CustomStringConvertible {
    let id: String
    let op: String
    let parameters: [String: String]
    let weights: [String: [Float]]
    let input: [Float]
    let output: [Float]
    let shape: [Int]

    var description: String { id }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/ops")

    /// Every case of the manifest (empty if it cannot be read: the test that
    /// loads them fails on that).
    static let all: [OpReferenceCase] = (try? load()) ?? []

    static func load() throws -> [OpReferenceCase] {
        let data = try Data(contentsOf: directory.appendingPathComponent("manifest.json"))
        guard let manifest = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let cases = manifest["cases"] as? [[String: Any]] else {
            throw LayerKitError.file("manifest.json: no cases")
        }
        return try cases.map { entry in
            func tensor(_ file: Any?) throws -> Tensor {
                guard let file = file as? String else { throw LayerKitError.file("manifest: missing file name") }
                return try Tensor(npyFile: directory.appendingPathComponent(file).path)
            }
            let input = try tensor(entry["input"])
            var weights: [String: [Float]] = [:]
            for (name, file) in entry["weights"] as? [String: Any] ?? [:] {
                weights[name] = try tensor(file).values
            }
            let parameters = (entry["params"] as? [String: Any] ?? [:]).mapValues { "\($0)" }
            return OpReferenceCase(id: entry["id"] as? String ?? "?", op: entry["op"] as? String ?? "?",
                                   parameters: parameters, weights: weights, input: input.values,
                                   output: try tensor(entry["output"]).values, shape: input.shape)
        }
    }

    /// The catalog layer for this case, parameters and weights set.
    func layer() throws -> ElementwiseLayer {
        guard let definition = OpDefinition.catalog.first(where: { $0.name == op }) else {
            throw LayerKitError.unknownOp(op)
        }
        let layer = try ElementwiseLayer(definition: definition, parameters: parameters)
        if !weights.isEmpty {
            try layer.setWeightData(definition.weightNames.map { name in
                weights[name].map { values in values.withUnsafeBufferPointer { Data(buffer: $0) } } ?? Data()
            })
        }
        return layer
    }
}

/// Why `actual` does not match `reference` at one element, or nil when it
/// does: NaN for NaN, the same infinity for an infinity, and otherwise
/// `|actual - reference| <= tolerance * max(1, |reference|)`.
func mismatch(_ actual: Float, _ reference: Float, tolerance: Double) -> String? {
    if reference.isNaN { return actual.isNaN ? nil : "expected NaN, got \(actual)" }
    if reference.isInfinite { return actual == reference ? nil : "expected \(reference), got \(actual)" }
    guard actual.isFinite else { return "expected \(reference), got \(actual)" }
    let error = abs(Double(actual) - Double(reference))
    return error <= tolerance * max(1, abs(Double(reference))) ? nil : "expected \(reference), got \(actual) (error \(error))"
}
