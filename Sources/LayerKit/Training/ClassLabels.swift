import Foundation

/// Class indices for training a classifier on a folder of images: one
/// non-negative whole number per item, from a text file (one a line) or a
/// `.npy` file of floats holding whole numbers (numpy writes integer arrays
/// as `<i8`; save them with `y.astype('<f4')`).
public enum ClassLabels {
    /// The largest class index a labels file may hold: far more classes
    /// than any classifier's output, small enough to be exact in Float32.
    public static let maximumIndex = 1 << 24

    /// Reads the labels in the file at `path`: a `.npy` file (a vector, or
    /// N x 1) or any other file as text, one integer per line (blank lines
    /// and surrounding spaces ignored). Throws `LayerKitError.file` naming the
    /// line or index of a value that is not a whole number from 0 to
    /// `maximumIndex`, and for a file with no labels.
    public static func read(contentsOf path: String) throws -> [Int] {
        let labels = URL(fileURLWithPath: path).pathExtension.lowercased() == "npy"
            ? try npyLabels(path) : try textLabels(path)
        guard !labels.isEmpty else { throw LayerKitError.file("\(path): no labels (expected one class index per item)") }
        return labels
    }

    private static func npyLabels(_ path: String) throws -> [Int] {
        let tensor = try Tensor(npyFile: path)
        guard tensor.shape.count == 1 || (tensor.shape.count == 2 && tensor.shape[1] == 1) else {
            throw LayerKitError.file("\(path) is \(Tensor.describe(tensor.shape)): class labels are a vector, "
                                     + "one class index per item")
        }
        return try tensor.values.enumerated().map { index, value in
            guard value.isFinite, value == value.rounded(), value >= 0, value <= Float(maximumIndex) else {
                throw LayerKitError.file("\(path): label \(index) is \(value); expected a whole number from 0 to "
                                         + "\(maximumIndex)")
            }
            return Int(value)
        }
    }

    private static func textLabels(_ path: String) throws -> [Int] {
        let data = try RegularFile.contents(path)
        guard let text = String(data: data, encoding: .utf8) else {
            throw LayerKitError.file("\(path): not a text file (expected one class index a line, or a .npy file)")
        }
        var labels: [Int] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let word = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if word.isEmpty { continue }
            guard let label = Int(word), (0...maximumIndex).contains(label) else {
                throw LayerKitError.file("\(path):\(number + 1): '\(word.prefix(40))' is not a class index "
                                         + "(a whole number from 0 to \(maximumIndex), one a line)")
            }
            labels.append(label)
        }
        return labels
    }
}
