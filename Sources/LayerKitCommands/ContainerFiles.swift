import Foundation
import LayerKit

/// Sequences, optionals and ZipMap's maps at the command line (Docs/CLI.md):
/// a sequence or optional is read from and written to a `.pb` holding
/// ONNX's `SequenceProto` or `OptionalProto` (as the onnx package's tests
/// store them); a sequence of maps (a scikit-learn classifier's ZipMap
/// output) is written as JSON, one object per row,
/// `[{"label": probability, ...}, ...]`.
enum ContainerFiles {
    /// Input `input` (a sequence or optional, `form`) from `path`, a `.pb`.
    static func read(_ path: String, for input: Model.ValueDescription, form: ValueForm) throws -> TypedTensor {
        guard path.lowercased().hasSuffix(".pb") else {
            throw UsageError("--input \(path): model input '\(input.name)' is a \(form); give it as a .pb file holding an "
                             + "ONNX \(form.isSequenceForm ? "SequenceProto" : "OptionalProto")")
        }
        return try TypedTensor(containerProto: RegularFile.bytes(path), form: form, source: "'\(path)'")
    }

    /// Writes output `name` (a container `value`) to `path`: `.pb` for a
    /// sequence or optional of tensors, `.json` for a sequence of maps.
    static func write(_ value: TypedTensor, name: String, to path: String) throws {
        let isMaps = value.sequenceElements?.contains { $0.container != nil } ?? false
        switch URL(fileURLWithPath: path).pathExtension.lowercased() {
        case "json" where isMaps || value.sequenceElements?.isEmpty == true:
            try AtomicFile.write(Data(json(value).utf8), to: path)
        case "pb" where !isMaps:
            try AtomicFile.write(Data(try value.containerProto(name: name)), to: path)
        default:
            throw UsageError("\(path): output '\(name)' is a \(value.form); write it as "
                             + (isMaps ? ".json ([{\"label\": probability, ...}, ...])" : ".pb (an ONNX \(value.form.isSequenceForm ? "SequenceProto" : "OptionalProto"))"))
        }
    }

    /// A sequence of maps as JSON text: one object per map, its keys in the
    /// map's order (an int64 label as its decimal string, as JSON keys are
    /// strings), each value the shortest text that reads back as the same float32.
    static func json(_ value: TypedTensor) throws -> String {
        let rows = try (value.sequenceElements ?? []).map { element -> String in
            guard case .map(let keys, let values)? = element.container else {
                throw LayerKitError.unsupported("a \(value.form) is not a sequence of maps")
            }
            let labels = keys.elementType == .string ? keys.strings : keys.integers().map(String.init)
            let entries = try zip(labels, values.doubles()).map { label, probability in
                let key = String(decoding: try JSONEncoder().encode(label), as: UTF8.self)
                return "\(key): \(Float(probability))"
            }
            return "{" + entries.joined(separator: ", ") + "}"
        }
        return "[" + rows.joined(separator: ",\n ") + "]\n"
    }

    /// The summary lines `layerkit run` prints for a container output:
    /// its form, then each tensor's shape, or the first maps' entries.
    static func summary(_ value: TypedTensor, name: String) -> [String] {
        switch value.container {
        case .sequence(let elements)?:
            if case .map? = elements.first?.container {
                var lines = ["output '\(name)': \(elements.count) maps {label: probability} (\(value.form))"]
                for (i, element) in elements.enumerated().prefix(8) {
                    guard case .map(let keys, let values)? = element.container else { continue }
                    let labels = keys.elementType == .string ? keys.strings : keys.integers().map(String.init)
                    lines.append("  [\(i)] " + zip(labels, values.doubles()).map { "\($0): \(Float($1))" }.joined(separator: ", "))
                }
                return lines
            }
            return ["output '\(name)': sequence of \(elements.count) \(value.elementType) tensors"
                    + (elements.isEmpty ? "" : ": " + elements.prefix(8).map { Tensor.describe($0.shape) }.joined(separator: ", "))
                    + (elements.count > 8 ? ", ..." : "")]
        case .optional(let held)?:
            guard let held else { return ["output '\(name)': empty optional (\(value.form))"] }
            return ["output '\(name)': optional holding " + (held.container != nil
                    ? (summary(held, name: name).first?.replacingOccurrences(of: "output '\(name)': ", with: "") ?? "")
                    : "\(held.elementType) \(Tensor.describe(held.shape))")]
        default:
            return ["output '\(name)': \(value.form)"]
        }
    }
}

extension ValueForm {
    /// Whether this is a sequence (else an optional or a map).
    var isSequenceForm: Bool {
        if case .sequence = self { return true }
        return false
    }
}
