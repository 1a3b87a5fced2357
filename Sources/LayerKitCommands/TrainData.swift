import Foundation
import LayerKit

/// `layerkit train`'s `--data` and `--labels`: a `.npy` of inputs with a
/// `.npy` of targets (or class indices, one a line), item `i` at index `i`
/// of axis 0; or a folder of pictures (`ImageFolderBatchProvider`) with one
/// class index per picture. The counts must agree before training starts.
enum TrainData {
    /// The provider for `data` and `labels`. The model (loaded only for a
    /// folder or class labels) gives a folder's picture size and channels
    /// (its one input, NxCxHxW) and, for a classifier's N x K output, the
    /// number of classes the labels must be below.
    static func provider(data: String, labels: String, model path: String, layers: [String], loss: Loss,
                         normalization: PixelNormalization, console: Console) throws -> TrainingBatchProvider {
        let model = { try ModelFiles.load(path, computeUnits: .cpuOnly, layers: layers, console: console) }
        if RunBatch.isDirectory(data) {
            return try folder(data, labels: labels, model: try model(), loss: loss, normalization: normalization)
        }
        guard data.lowercased().hasSuffix(".npy") else {
            throw UsageError("--data \(data): expected a .npy file (axis 0: the items) or a folder of pictures")
        }
        let inputs = try Tensor(npyFile: data)
        let targets = labels.lowercased().hasSuffix(".npy") ? try Tensor(npyFile: labels) : try classTensor(labels)
        guard let items = inputs.shape.first, items > 0 else {
            throw LayerKitError.shapeMismatch("--data \(data) is \(Tensor.describe(inputs.shape)): axis 0 must hold "
                                              + "the items")
        }
        guard targets.shape.first == items else {
            throw LayerKitError.shapeMismatch("--labels \(labels) has \(targets.shape.first ?? 0) items (axis 0 of "
                                              + "\(Tensor.describe(targets.shape))), --data \(data) has \(items) (axis 0 "
                                              + "of \(Tensor.describe(inputs.shape))): give one label per item")
        }
        if takesClasses(loss), let classes = classes(try model()) {
            try checkClasses(targets, classes: classes, labels: labels)
        }
        return try ArrayBatchProvider(inputs: inputs, targets: targets)
    }

    /// A folder of pictures, made the size of the model's first input.
    private static func folder(_ data: String, labels: String, model: Model, loss: Loss,
                               normalization: PixelNormalization) throws -> TrainingBatchProvider {
        guard let input = model.inputs.first, model.inputs.count == 1, input.dimensions.count == 4,
              let channels = input.dimensions[1].size, let height = input.dimensions[2].size,
              let width = input.dimensions[3].size else {
            throw UsageError("--data \(data): a folder of pictures trains a model with one NxCxHxW input of fixed "
                             + "C, H and W; this one takes " + model.inputs.map(\.description).joined(separator: ", "))
        }
        guard takesClasses(loss) else {
            throw UsageError("--data \(data): a folder's labels are class indices, for --loss ce (or "
                             + "ce-probabilities); give a .npy of inputs and one of targets for \(loss.rawValue)")
        }
        return try ImageFolderBatchProvider(folder: URL(fileURLWithPath: data),
                                            labels: try ClassLabels.read(contentsOf: labels),
                                            width: width, height: height, channels: channels,
                                            normalization: normalization,
                                            classes: classes(model))
    }

    /// Whether `loss` reads class indices as its targets.
    private static func takesClasses(_ loss: Loss) -> Bool { loss == .crossEntropy || loss == .crossEntropyFromProbabilities }

    /// The class count of a classifier: K of its one N x K output, when fixed.
    private static func classes(_ model: Model) -> Int? {
        guard model.outputs.count == 1, model.outputs[0].dimensions.count == 2 else { return nil }
        return model.outputs[0].dimensions[1].size
    }

    /// Class indices from a text file, as a vector of Float32.
    private static func classTensor(_ labels: String) throws -> Tensor {
        let indices = try ClassLabels.read(contentsOf: labels)
        return try Tensor(shape: [indices.count], values: indices.map(Float.init))
    }

    /// Throws unless every class index in `targets` (a vector) is below `classes`.
    private static func checkClasses(_ targets: Tensor, classes: Int, labels: String) throws {
        guard targets.count == targets.shape[0] else { return }
        for i in 0..<targets.count where !(targets[i] >= 0 && targets[i] < Float(classes) && targets[i] == targets[i].rounded()) {
            throw LayerKitError.invalidParameter("--labels \(labels): label \(i) is \(targets[i]); the model has "
                                                 + "\(classes) classes (0 to \(classes - 1))")
        }
    }
}
