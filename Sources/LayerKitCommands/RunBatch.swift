import Foundation
import LayerKit

/// `layerkit run model.onnx --input DIR/` (or several files for a
/// one-input model): every `.npy`/`.png`/`.jpg` in the folder, in name order, one
/// run each or `--batch N` stacked into one N-item run; with `--output DIR/`
/// each output is written under the input's name (`.npy`; `NAME.OUTPUT.npy`
/// for a model with several outputs). Never over an input: the output
/// folder must not be the input folder, and every file is checked by
/// identity (`TensorFiles.checkOutput`).
enum RunBatch {
    /// One item of a batch: its input file and, with `--output`, where each output goes.
    struct Item {
        let input: String
        let outputs: [String: String]
    }

    /// The input files `specs` name for a batch, or nil when they are an
    /// ordinary run's (`--input FILE` or `NAME=FILE` each).
    static func files(_ specs: [String], model: Model) throws -> [String]? {
        let folders = specs.filter(isDirectory)
        if folders.isEmpty {
            guard specs.count > 1, model.inputs.count == 1,
                  !specs.contains(where: { $0.hasPrefix(model.inputs[0].name + "=") }) else { return nil }
            return specs
        }
        guard model.inputs.count == 1 else {
            throw UsageError("--input \(folders[0]): a folder runs a one-input model; this one has "
                             + model.inputs.map(\.name).joined(separator: ", "))
        }
        guard specs.count == 1 else { throw UsageError("--input: give one folder or several files, not both") }
        let names = try FileManager.default.contentsOfDirectory(atPath: folders[0])
        let files = names.filter { !$0.hasPrefix(".") && TensorFiles.readable.contains(URL(fileURLWithPath: $0).pathExtension.lowercased()) }
            .sorted().map { URL(fileURLWithPath: folders[0]).appendingPathComponent($0).path }
        guard !files.isEmpty else {
            throw LayerKitError.file("\(folders[0]): no \(TensorFiles.readableText) files to run")
        }
        return files
    }

    /// The items for `inputs`, with their output files under `folder`.
    static func items(_ inputs: [String], model: Model, modelPath: String, folder: String?) throws -> [Item] {
        guard let folder else { return inputs.map { Item(input: $0, outputs: [:]) } }
        if FileManager.default.fileExists(atPath: folder), !isDirectory(folder) {
            throw UsageError("--output \(folder): a batch writes into a folder; this is a file")
        }
        let inputFolders = Set(inputs.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path })
        if let target = FileIdentity(folder), inputFolders.contains(where: { FileIdentity($0) == target }) {
            throw UsageError("--output \(folder) is the folder of the inputs: the outputs would sit among them; give another folder")
        }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let several = model.outputs.count > 1
        let reads = ReadFiles(inputs + [modelPath])
        var seen: Set<String> = []
        return try inputs.map { input in
            let stem = URL(fileURLWithPath: input).deletingPathExtension().lastPathComponent
            var outputs: [String: String] = [:]
            for output in model.outputs {
                let name = (several ? "\(stem).\(output.name)" : stem) + ".npy"
                guard seen.insert(name).inserted else {
                    throw UsageError("\(input): another input also writes \(name) (same name, other extension)")
                }
                let path = URL(fileURLWithPath: folder).appendingPathComponent(name).path
                try TensorFiles.checkOutput(path, notAmong: reads)
                outputs[output.name] = path
            }
            return Item(input: input, outputs: outputs)
        }
    }

    /// Throws unless `count` files fill groups of `batch` the model's input takes.
    static func check(batch: Int, count: Int, input: Model.ValueDescription) throws {
        guard batch > 1, let fixed = input.dimensions.first?.size else { return }
        guard fixed == batch else {
            throw UsageError("--batch \(batch): input '\(input.name)' has a fixed batch of \(fixed); "
                             + "--batch needs a symbolic batch dimension or \(fixed)")
        }
        guard count % batch == 0 else {
            throw UsageError("--batch \(batch): \(count) files do not fill batches of \(batch), and input "
                             + "'\(input.name)' has a fixed batch of \(fixed)")
        }
    }

    /// `items` in groups of `batch`, each stacked along axis 0 into one input.
    static func stacked(_ values: [TypedTensor], files: [String], batch: Int, input: Model.ValueDescription) throws -> TypedTensor {
        let first = values[0]
        for (value, file) in zip(values, files) where value.shape != first.shape || value.elementType != first.elementType {
            throw LayerKitError.shapeMismatch("\(file) is \(value), \(files[0]) is \(first): a batch needs one shape and type")
        }
        guard batch > 1 else { return first }
        guard first.shape.first == 1 else {
            throw LayerKitError.shapeMismatch("\(files[0]) is \(Tensor.describe(first.shape)): --batch stacks items of batch 1")
        }
        let shape = [values.count] + first.shape.dropFirst()
        if first.elementType == .string { return try TypedTensor(shape: shape, strings: values.flatMap(\.strings)) }
        return try TypedTensor(elementType: first.elementType, shape: shape, bytes: values.flatMap(\.bytes))
    }

    /// Item `index` of a stacked output (batch `items`).
    static func item(_ index: Int, of output: TypedTensor, items: Int, name: String) throws -> TypedTensor {
        guard items > 1 else { return output }
        guard output.shape.first == items else {
            throw LayerKitError.shapeMismatch("output '\(name)' is \(Tensor.describe(output.shape)): "
                                              + "no batch of \(items) items to split")
        }
        let shape = [1] + output.shape.dropFirst()
        let count = output.count / items
        if output.elementType == .string {
            return try TypedTensor(shape: shape, strings: Array(output.strings[index * count..<(index + 1) * count]))
        }
        let width = output.bytes.count / max(output.count, 1)
        return try TypedTensor(elementType: output.elementType, shape: shape,
                               bytes: Array(output.bytes[index * count * width..<(index + 1) * count * width]))
    }

    static func isDirectory(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
    }
}
