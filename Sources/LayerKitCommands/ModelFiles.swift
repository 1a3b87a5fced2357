import Foundation
import LayerKit

/// What the model commands share: finding and loading the model, reading
/// its inputs from files, and describing the device and placements.
enum ModelFiles {
    /// The one positional argument: the model path (`.onnx`; `.mlmodel`, `.mlpackage`: Docs/COREML.md; `.tflite`: Docs/TFLITE.md).
    static func modelPath(_ arguments: Arguments) throws -> String {
        guard arguments.positional.count == 1, let path = arguments.positional.first else {
            throw UsageError("expected one model file (.onnx, .mlmodel, .mlpackage or .tflite), got \(arguments.positional.count) paths")
        }
        return path
    }

    /// Loads the model, announcing CPU fallbacks on standard error; with
    /// `--backend gpu` a missing GPU is an error. `threads`: `--threads`;
    /// `layers` are the `--layer OPTYPE=FORMULA` words: nodes of those op
    /// types run as the formulas.
    static func load(_ path: String, computeUnits: ComputeUnits, threads: Int? = nil, layers: [String] = [],
                     console: Console) throws -> Model {
        let registry = try self.registry(layers)
        do {
            return try Model(contentsOf: URL(fileURLWithPath: path), computeUnits: computeUnits, threads: threads,
                             registry: registry, notice: { console.note($0) })
        } catch let error as LayerKitError {
            throw withLayerHint(error)
        }
    }

    /// `error`, when it asks to register a layer for a custom op, with how
    /// the command line does it (`--layer OPTYPE=FORMULA`); else unchanged.
    static func withLayerHint(_ error: LayerKitError) -> LayerKitError {
        guard let opType = LayerRegistry.missingLayer(in: error.description) else { return error }
        return error.suffixed(" (\(layerHint(opType)))")
    }

    /// How the command line runs custom op `opType`: `--layer`.
    static func layerHint(_ opType: String) -> String {
        "on the command line: --layer \(opType)='FORMULA', a per-element formula over x "
            + "whose other names are the node's attributes and constant inputs; Docs/CLI.md"
    }

    /// The shared registry, or with `--layer` words a new one (the built-in
    /// layers) with each formula registered for its op type.
    static func registry(_ layers: [String]) throws -> LayerRegistry {
        guard !layers.isEmpty else { return .shared }
        let registry = LayerRegistry()
        var seen: Set<String> = []
        for word in layers {
            let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].trimmingCharacters(in: .whitespaces).isEmpty else {
                throw UsageError("--layer \(word): expected OPTYPE=FORMULA, e.g. ArticleSwish='x * sigmoid(beta * x)'")
            }
            guard seen.insert(parts[0].lowercased()).inserted else {
                throw UsageError("--layer \(parts[0]) is given twice")
            }
            try ValueParsing.onCommandLine { try registry.register(formula: parts[1], forNodesOfType: parts[0]) }
        }
        return registry
    }

    /// `device: llvmpipe (cpu; GPU timings are emulated)` or why there is none.
    static func deviceLine(_ backend: Backend) -> String {
        guard let gpu = backend.gpu else {
            return backend.computeUnits == .cpuOnly ? "device: CPU only (--backend cpu)"
                : "device: none (\(backend.gpuUnavailableReason ?? "no GPU")); every layer runs on the CPU"
        }
        let info = gpu.deviceInfo
        return "device: \(info.name) (\(info.kind.rawValue)" + (info.kind == .cpu ? "; GPU timings are emulated)" : ")")
    }

    /// `GPU`, `CPU`, or `-` for nodes without work.
    static func describe(_ node: Model.NodeDescription) -> String {
        switch node.placement {
        case nil: "-"
        case .gpu?: "GPU"
        case .cpu?: "CPU"
        }
    }

    /// The model's inputs from the files `files(_:for:option:)` found for
    /// `--input FILE` (a one-input model) or repeated `--input NAME=FILE`,
    /// by input name, each read by `input(_:for:image:console:)`.
    /// Every input of the model needs a file; the error names the first
    /// one without, and all the model takes.
    static func inputs(_ files: [String: String], of model: Model, image: ImageOptions,
                       console: Console) throws -> [String: TypedTensor] {
        var values: [String: TypedTensor] = [:]
        for description in model.inputs {
            guard let path = files[description.name] else {
                throw UsageError("missing --input for model input '\(description.name)' (the model takes "
                                 + model.inputs.map { "\($0.name): \($0.form?.description ?? $0.dataType?.description ?? "untyped")" }
                                    .joined(separator: ", ") + "; give each as --input NAME=FILE)")
            }
            values[description.name] = try input(path, for: description, image: image, console: console)
        }
        return values
    }

    /// One input's value from its file, the one reader of every command:
    /// `.npy` in its own dtype, `.pb` (an ONNX TensorProto, any element
    /// type), or a PNG or JPEG picture prepared by `image` (resized,
    /// cropped, normalized, channels first or last) and its channels fitted
    /// to the input (gray to RGB, RGBA to RGB). A file of another element
    /// type than the input's is an error naming both.
    static func input(_ path: String, for input: Model.ValueDescription, image: ImageOptions,
                      console: Console) throws -> TypedTensor {
        if let form = input.form { return try ContainerFiles.read(path, for: input, form: form) }
        let value: TypedTensor
        if TensorFiles.isImage(path) {
            value = TypedTensor(try picture(try TensorFiles.read(path), path: path, for: input, image: image,
                                            console: console))
        } else {
            value = try TensorFiles.readTyped(path)
        }
        let type = input.dataType ?? .float32
        // A picture is float32 by nature: it may feed any float input.
        if TensorFiles.isImage(path), type.isFloatingPoint { return try value.converted(to: type) }
        guard value.elementType == type else {
            throw UsageError("--input \(path) holds \(value.elementType) values; model input '\(input.name)' is \(type)"
                             + (TypedTensor.numpyName(type).map { " (save it with a.astype(np.\($0)))" } ?? ""))
        }
        return value
    }

    /// The model's inputs from `--input` files (pictures prepared by
    /// `image`), or, with none given, seeded inputs of the model's shapes:
    /// uniform [0, 1) floats, input `i` from seed `i + 1`, and zeros for
    /// integer and bool inputs (a valid index of any axis); `seeded` says
    /// which. A seeded input's shape is its `--shape NAME=DIMS`, else the
    /// model's with each symbolic dimension its `--dim SYMBOL=N` or 1
    /// (`SeededShapes`). Float32 tensors, as the timing commands run them
    /// (integers as whole numbers).
    static func inputsOrSeeded(_ arguments: Arguments, of model: Model, console: Console) throws
        -> (inputs: [String: Tensor], files: [String: String], seeded: Bool) {
        let specs = arguments.values("--input")
        let shapes = try SeededShapes(arguments, of: model)
        guard specs.isEmpty else {
            guard shapes.isEmpty else { throw UsageError("--shape and --dim shape seeded inputs: drop them or --input") }
            let files = try files(specs, for: model.inputs.map(\.name), option: "--input")
            let values = try inputs(files, of: model, image: try ImageOptions(arguments), console: console)
            return (try values.mapValues { try $0.float32Tensor() }, files, false)
        }
        var tensors: [String: Tensor] = [:]
        for (i, input) in model.inputs.enumerated() {
            let shape = try shapes.shape(of: input)
            tensors[input.name] = input.dataType?.isFloatingPoint ?? true
                ? try Tensor.uniform(shape: shape, in: 0...1, seed: UInt64(i + 1))
                : try Tensor(shape: shape)
        }
        return (tensors, [:], true)
    }

    /// `FILE` (for a model with one such value) or `NAME=FILE` each, by
    /// name. A word before `=` without `/` or `.` is a name, so a name the
    /// model lacks is an error with the closest one (`./a=b.npy` is a file);
    /// a value given two files is an error.
    static func files(_ specs: [String], for names: [String], option: String) throws -> [String: String] {
        let kind = option == "--input" ? "input" : "output"
        var files: [String: String] = [:]
        for spec in specs {
            let parts = spec.split(separator: "=", maxSplits: 1).map(String.init)
            let name: String
            let file: String
            if parts.count == 2, names.contains(parts[0]) {
                (name, file) = (parts[0], parts[1])
            } else if parts.count == 2, !parts[0].isEmpty, !parts[0].contains("/"), !parts[0].contains(".") {
                throw UsageError("\(option) \(spec): the model has no \(kind) '\(parts[0])'"
                                 + NameSuggestion.hint(for: parts[0], among: names)
                                 + " (its \(kind)s: \(names.joined(separator: ", ")))")
            } else if names.count == 1 {
                (name, file) = (names[0], spec)
            } else {
                throw UsageError("\(option) \(spec): the model has \(names.joined(separator: ", ")); "
                                 + "give each as \(option) NAME=FILE")
            }
            if let earlier = files[name] {
                throw UsageError("\(option) \(spec): \(kind) '\(name)' already has \(earlier); the model has "
                                 + "\(names.count) \(kind)\(names.count == 1 ? "" : "s") (\(names.joined(separator: ", ")))")
            }
            files[name] = file
        }
        return files
    }

    /// A decoded PNG or JPEG made to fit an image input (NCHW, or NHWC as
    /// `image.layout(for:)` says): resized and cropped, its size checked
    /// against the input's, gray repeated into the input's colour channels
    /// or alpha dropped (each with a one-line notice), then scaled,
    /// ordered, normalized and laid out.
    private static func picture(_ decoded: Tensor, path: String, for input: Model.ValueDescription,
                                image: ImageOptions, console: Console) throws -> Tensor {
        var steps = image.steps
        steps.layout = image.layout(for: input)
        let tensor = try ValueParsing.onCommandLine { try steps.geometry(decoded) }
        var channels: Int?
        if input.dimensions.count == 4 {
            let sizes = input.dimensions.map(\.size)
            let (c, h, w) = steps.layout == .nhwc ? (sizes[3], sizes[1], sizes[2]) : (sizes[1], sizes[2], sizes[3])
            if let height = h, let width = w, [height, width] != Array(tensor.shape[2...]) {
                throw LayerKitError.shapeMismatch("\(path) is \(tensor.shape[3])x\(tensor.shape[2]) pixels"
                                                  + (steps.resize == nil && steps.centerCrop == nil ? "" : " after --resize/--center-crop")
                                                  + "; input '\(input.name)' takes \(width)x\(height) (\(steps.layout.rawValue.uppercased())) "
                                                  + "(add --resize \(width)x\(height), or --resize N --center-crop \(width)x\(height))")
            }
            channels = c
        }
        if let channels, channels != tensor.shape[1] {
            switch (tensor.shape[1], channels) {
            case (1, _):
                console.note("\(path) is gray: its channel is repeated into the \(channels) channels of input '\(input.name)'")
            case (4, 3):
                console.note("\(path) is RGBA: its alpha is dropped for the 3 channels of input '\(input.name)'")
            default:
                throw LayerKitError.shapeMismatch("\(path) has \(tensor.shape[1]) colour channels; input '\(input.name)' "
                                                  + "takes \(channels)" + (image.layout == nil && steps.layout == .nchw
                                                      ? " (a channels-last model? add --layout nhwc)" : ""))
            }
        }
        return try ValueParsing.onCommandLine { try steps.finish(tensor, channels: channels) }
    }
}
