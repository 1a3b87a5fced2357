import Foundation

/// Training items from a folder of PNG and JPEG pictures with a class index
/// each: item `i` is the `i`-th picture in file-name order (hidden files,
/// subfolders and other file types are not items), decoded when asked for,
/// resized to `width` x `height` (bilinear, `Tensor.resized`), fitted to
/// `channels` (gray repeated, RGBA's alpha dropped: `fittingChannels`) and
/// normalized; its target is its class index.
public struct ImageFolderBatchProvider: TrainingBatchProvider, Sendable {
    /// The pictures, in file-name order: item `i` is `files[i]`.
    public let files: [String]
    /// The class index of each picture.
    public let labels: [Int]
    /// The size and channel count every input is made.
    public let width: Int, height: Int, channels: Int
    /// How pixels (0...1 as read) become input values.
    public let normalization: PixelNormalization

    /// The `.png`, `.jpg` and `.jpeg` files directly in `folder`, in name order.
    public static func imageFiles(in folder: URL) throws -> [String] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        } catch {
            throw LayerKitError.file("cannot list the folder '\(folder.path)': \(error.localizedDescription)")
        }
        return names.filter { name in
            var isFolder: ObjCBool = false
            return !name.hasPrefix(".")
                && ["png", "jpg", "jpeg"].contains(URL(fileURLWithPath: name).pathExtension.lowercased())
                && FileManager.default.fileExists(atPath: folder.appendingPathComponent(name).path, isDirectory: &isFolder)
                && !isFolder.boolValue
        }.sorted().map { folder.appendingPathComponent($0).path }
    }

    /// The pictures in `folder` with `labels`, one per picture in file-name
    /// order. Throws `LayerKitError.file` for a folder without pictures and
    /// `LayerKitError.shapeMismatch` when the labels and pictures differ in
    /// number; with `classes`, a label outside `0..<classes` throws
    /// `LayerKitError.invalidParameter` naming its picture. Pictures are
    /// read later, by `features(at:)`.
    public init(folder: URL, labels: [Int], width: Int, height: Int, channels: Int,
                normalization: PixelNormalization = .unit, classes: Int? = nil) throws {
        guard width > 0, height > 0, channels > 0 else {
            throw LayerKitError.invalidParameter("images are made \(width)x\(height) with \(channels) channels: "
                                                 + "each must be positive")
        }
        let files = try Self.imageFiles(in: folder)
        guard !files.isEmpty else {
            throw LayerKitError.file("\(folder.path): no .png, .jpg or .jpeg pictures to train on")
        }
        guard labels.count == files.count else {
            throw LayerKitError.shapeMismatch("\(labels.count) label\(labels.count == 1 ? "" : "s") for "
                                              + "\(files.count) picture\(files.count == 1 ? "" : "s") in "
                                              + "\(folder.path): give one class index per picture, in file-name order")
        }
        if let classes, let bad = labels.firstIndex(where: { !(0..<classes).contains($0) }) {
            throw LayerKitError.invalidParameter("label \(labels[bad]) of \(files[bad]) (item \(bad)) is not a class "
                                                 + "of the model's \(classes) (0 to \(classes - 1))")
        }
        (self.files, self.labels) = (files, labels)
        (self.width, self.height, self.channels, self.normalization) = (width, height, channels, normalization)
    }

    /// How many items there are: one per picture.
    public var count: Int { files.count }

    /// Item `index`: the picture as a channels x height x width input (an
    /// example has no batch axis) and its class index as a one-element target. Throws for an index
    /// outside `0..<count` and for a picture that cannot be read or fitted
    /// (the error names the file).
    public func features(at index: Int) throws -> (input: Tensor, target: Tensor) {
        guard files.indices.contains(index) else {
            throw LayerKitError.invalidParameter("item \(index) of a folder of \(files.count) pictures")
        }
        let path = files[index]
        let decoded = ["jpg", "jpeg"].contains(URL(fileURLWithPath: path).pathExtension.lowercased())
            ? try Tensor(jpegFile: path) : try Tensor(pngFile: path)
        let sized = decoded.shape[2] == height && decoded.shape[3] == width
            ? decoded : try decoded.resized(width: width, height: height)
        let input: Tensor
        do {
            input = try sized.fittingChannels(channels).normalized(normalization)
        } catch let error as LayerKitError {
            throw LayerKitError.shapeMismatch("\(path): \(error)")
        }
        return (try input.reshaped(to: [channels, height, width]), try Tensor(shape: [1], values: [Float(labels[index])]))
    }
}
