import LayerKitCore
import Foundation

/// A Core ML ML Program: the `Model` message of a `.mlmodel` file whose
/// type is `mlProgram` (field 502), alone or as the root model of a
/// `.mlpackage` folder (`init(package:)`), with the weights files its
/// `BlobFileValue`s name (`@model_path/weights/weight.bin`).
///
/// Decoding reads the `main` function's block for the opset it names;
/// `onnxModel()` translates its operations into standard ONNX ops, which
/// the ONNX importer runs (Docs/COREML.md, "ML Programs"). Every error is a
/// `LayerKitError.invalidModel` naming the file.
public struct MLProgramModel: Sendable {
    /// The specification version the model declares (6 for iOS 15's ML Programs).
    public var specificationVersion: Int
    /// The program's `main` function.
    var function: MILFunction
    /// What `@model_path` names in a weights file's name: the model file's folder; nil for bytes read
    /// without one, where a weight in a weights file is an error.
    let modelFolder: URL?
    /// The folder every weights file must lie in: the package, or the model file's folder.
    let boundary: URL?
    /// Names the model in error messages.
    let source: String

    /// The `Model` field of an ML Program.
    static let programField = 502
}

extension MLProgramModel {
    /// Decodes a `Model` holding an `mlProgram`; `modelFolder` is the folder
    /// `@model_path` names, `boundary` the folder its weights files must be in.
    public init(data: Data, source: String, modelFolder: URL? = nil, boundary: URL? = nil) throws {
        var reader = ProtobufReader(bytes: [UInt8](data), message: "Model", source: source)
        var version = 0, function: MILFunction?
        while let field = try reader.nextField() {
            switch field.number {
            case 1: version = Int(try reader.int32(field, "specificationVersion"))
            case Self.programField:
                var program = try reader.message(field, "mlProgram", type: "Program")
                function = try MILFunction(program: &program)
            default: try reader.skip(field)
            }
        }
        guard let function else {
            throw LayerKitError.invalidModel("\(source): the Core ML model holds no ML Program (mlProgram)")
        }
        self.init(specificationVersion: version, function: function, modelFolder: modelFolder,
                  boundary: boundary ?? modelFolder, source: source)
    }

    /// Reads the `.mlpackage` folder at `url`: its `Manifest.json` names the
    /// root model item, whose path (under the package's `Data` folder) must
    /// stay inside the package, as must every weights file.
    public init(package url: URL) throws {
        let name = url.lastPathComponent
        let manifestURL = url.appendingPathComponent("Manifest.json")
        guard FileManager.default.fileExists(atPath: manifestURL.path) else {
            throw LayerKitError.invalidModel("\(name): the package has no Manifest.json")
        }
        let manifest = try RegularFile.contents(manifestURL.path)
        let path = try Self.rootModelPath(manifest, source: "\(name)/Manifest.json")
        let modelURL = url.appendingPathComponent("Data").appendingPathComponent(path)
        try Self.check(modelURL, isInside: url, "\(name)/Manifest.json: the root model's path '\(path)'")
        try self.init(data: try RegularFile.contents(modelURL.path), source: "\(name)/Data/\(path)",
                      modelFolder: modelURL.deletingLastPathComponent(), boundary: url)
    }

    /// The root model item's path in a package manifest
    /// (`itemInfoEntries[rootModelIdentifier].path`), relative to `Data`.
    static func rootModelPath(_ manifest: Data, source: String) throws -> String {
        guard let json = try? JSONSerialization.jsonObject(with: manifest) as? [String: Any] else {
            throw LayerKitError.invalidModel("\(source): not a JSON object")
        }
        guard let root = json["rootModelIdentifier"] as? String else {
            throw LayerKitError.invalidModel("\(source): no rootModelIdentifier")
        }
        guard let item = (json["itemInfoEntries"] as? [String: Any])?[root] as? [String: Any],
              let path = item["path"] as? String else {
            throw LayerKitError.invalidModel("\(source): no path for the root model item '\(root)' in itemInfoEntries")
        }
        return path
    }

    /// Refuses a path that leaves `folder`: an absolute path, a `..`
    /// component, or a link pointing out of it.
    static func check(_ url: URL, isInside folder: URL, _ what: String) throws {
        let relative = url.path.hasPrefix(folder.path) ? String(url.path.dropFirst(folder.path.count)) : url.path
        let components = relative.split(separator: "/")
        let resolved = url.resolvingSymlinksInPath().path, root = folder.resolvingSymlinksInPath().path + "/"
        guard !components.contains(".."), resolved.hasPrefix(root) else {
            throw LayerKitError.invalidModel("\(what) leaves \(folder.lastPathComponent)")
        }
    }

    /// The weights file a `BlobFileValue` names (`@model_path/...`), checked to lie inside `boundary`.
    func blobFileURL(_ name: String) throws -> URL {
        let prefix = "@model_path/"
        guard name.hasPrefix(prefix) else {
            throw LayerKitError.invalidModel("weights file '\(name)' is not under @model_path")
        }
        guard let modelFolder, let boundary else {
            throw LayerKitError.invalidModel("weights file '\(name)' cannot be found: the model was read without "
                                             + "its folder")
        }
        let relative = String(name.dropFirst(prefix.count))
        guard !relative.hasPrefix("/") else { throw LayerKitError.invalidModel("weights file '\(name)' is absolute") }
        let url = modelFolder.appendingPathComponent(relative)
        try Self.check(url, isInside: boundary, "weights file '\(name)'")
        return url
    }
}
