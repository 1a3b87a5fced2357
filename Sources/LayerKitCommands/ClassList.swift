import Foundation
import LayerKit

/// What `run` prints of a classifier's 2-D output: each row's top classes,
/// named by `--labels` and, with `--softmax`, as probabilities.
struct ClassList {
    /// Class names by index, from `--labels FILE` (one a line), or nil.
    let labels: [String]?
    /// Whether `--softmax` turns each row of logits into probabilities.
    let softmax: Bool

    /// Reads `run`'s `--labels` file and `--softmax` flag.
    init(_ arguments: Arguments) throws {
        softmax = arguments.has("--softmax")
        guard let path = arguments.value("--labels") else {
            labels = nil
            return
        }
        let data: Data
        do { data = try RegularFile.contents(path) } catch { throw UsageError("--labels \(path): \(error)") }
        guard let text = String(data: data, encoding: .utf8) else {
            throw UsageError("--labels \(path): not UTF-8 text (expected one label a line)")
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasSuffix("\r") ? String($0.dropLast()) : String($0) }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard !lines.isEmpty else { throw UsageError("--labels \(path): no labels (expected one label a line)") }
        labels = lines
    }

    private init(labels: [String]?, softmax: Bool) { (self.labels, self.softmax) = (labels, softmax) }

    /// The model's own class labels (a Core ML classifier's) where `--labels` gives none.
    func defaulting(to modelLabels: [String]?) -> ClassList {
        labels == nil ? ClassList(labels: modelLabels, softmax: softmax) : self
    }

    /// Each row's class label of a classifier's label output: a string
    /// output's strings, an int64 one's integers (for a model with class
    /// labels); nil for another output or model.
    static func labels(of output: TypedTensor, modelLabels: [String]?) -> [String]? {
        guard output.shape.count == 1 || (output.shape.count == 2 && output.shape[1] == 1) else { return nil }
        if output.elementType == .string { return output.strings }
        guard modelLabels != nil, output.elementType == .int64 else { return nil }
        return output.integers().map(String.init)
    }

    /// Throws unless `--labels` (when given) has as many labels as one of
    /// the 2-D `outputs` (name, classes) has classes.
    func check(outputs: [(name: String, classes: Int)], path: String) throws {
        guard let labels, !outputs.contains(where: { $0.classes == labels.count }) else { return }
        throw UsageError("--labels \(path) has \(labels.count) labels; the model's 2-D outputs have "
                         + (outputs.isEmpty ? "none" : outputs.map { "\($0.classes) classes ('\($0.name)')" }
                            .joined(separator: ", ")))
    }

    /// The `k` largest values of each row (batch item) of an N×K output,
    /// ties by index; each named when the labels fit K, and with its
    /// softmax probability (computed in Float64) under `--softmax`.
    func top(_ output: Tensor, k: Int) -> [[RunRecord.Class]] {
        let (rows, columns) = (output.shape[0], output.shape[1])
        let names = labels?.count == columns ? labels : nil
        return (0..<rows).map { row in
            let values = (0..<columns).map { output[row * columns + $0] }
            let probabilities = softmax ? Self.softmax(values) : nil
            let best = values.indices.sorted { values[$0] > values[$1] || (values[$0] == values[$1] && $0 < $1) }.prefix(k)
            return best.map { index in
                RunRecord.Class(index: index, value: values[index], label: names?[index],
                                probability: probabilities.map { Float($0[index]) })
            }
        }
    }

    /// `exp(x - max) / sum`, in Float64.
    static func softmax(_ values: [Float]) -> [Double] {
        let largest = Double(values.max() ?? 0)
        let exponentials = values.map { Foundation.exp(Double($0) - largest) }
        let total = exponentials.reduce(0, +)
        return exponentials.map { $0 / total }
    }

    /// A class as `run` prints it: `281 tabby cat (0.4123)`.
    func describe(_ item: RunRecord.Class) -> String {
        "\(item.index)" + (item.label.map { " \($0)" } ?? "") + " (" + Self.number(item.probability ?? item.value) + ")"
    }

    /// Four decimals for ordinary magnitudes (0.001 to 100000, and 0),
    /// else three significant digits in exponent form (`1.234e-09`), so a
    /// tiny value never prints as 0.0000.
    static func number(_ value: Float) -> String {
        let magnitude = abs(value)
        return magnitude == 0 || (magnitude >= 1e-3 && magnitude < 1e5) || !value.isFinite
            ? String(format: "%.4f", value) : String(format: "%.3e", value)
    }
}
