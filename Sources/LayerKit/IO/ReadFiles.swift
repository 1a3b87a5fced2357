import Foundation
import LayerKitONNX

/// The files a command reads, gathered once so that every file it writes
/// (run outputs, a trained model, a checkpoint, a plot, a trace) is checked
/// against all of them in one place (`refuseOverwrite(of:)`), before
/// anything is written: an output that is one of them would destroy what
/// the user gave, or (a model's external-data file) leave a model that
/// still loads and predicts garbage.
///
/// A path names more than its own file: a folder (a folder of training
/// pictures, of run inputs) brings every entry in it, a Core ML package
/// (`.mlpackage`) every file inside it at any depth, and an ONNX model
/// (`.onnx`) the external-data files its initializers name, beside it.
public struct ReadFiles: Sendable {
    /// Every file read, as given or as found (folder entries, data files).
    public let paths: [String]

    /// The files `paths` name, expanded as the type describes. A path that
    /// does not exist (yet) or a model that cannot be decoded adds itself
    /// alone: reading it reports what is wrong.
    public init(_ paths: [String]) {
        self.paths = paths.flatMap { path in [path] + Self.folderEntries(path) + Self.externalDataFiles(ofModelAt: path) }
    }

    /// Throws `LayerKitError.file` if `output` is one of the files read
    /// (by identity: links and `..` do not hide it). An output that does
    /// not exist yet is none of them.
    public func refuseOverwrite(of output: String) throws {
        try FileIdentity.refuseOverwrite(of: output, readingFrom: paths)
    }

    /// Every entry of the folder at `path`, every file at any depth of a package (none for a file).
    private static func folderEntries(_ path: String) -> [String] {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue,
              let names = ModelFileFormat.isPackage(URL(fileURLWithPath: path))
                ? FileManager.default.subpaths(atPath: path) : try? FileManager.default.contentsOfDirectory(atPath: path)
        else { return [] }
        // Joined as text, not through URL: messages name the files as the user spelled the folder.
        return names.sorted().map { (path as NSString).appendingPathComponent($0) }
    }

    /// The external-data files the ONNX model at `path` names, in its
    /// folder; none for another file.
    static func externalDataFiles(ofModelAt path: String) -> [String] {
        guard path.lowercased().hasSuffix(".onnx"), let data = try? RegularFile.contents(path),
              let model = try? ONNXModel(data: data, source: path) else { return [] }
        let folder = (path as NSString).deletingLastPathComponent
        return Set(model.graph.initializers.values.compactMap(\.externalDataLocation)).sorted()
            .map { (folder as NSString).appendingPathComponent($0) }
    }
}
