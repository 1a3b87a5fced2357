import Foundation
import LayerKit

/// `layerkit run model.onnx --input ...`: runs an ONNX model on `.npy`,
/// PNG or JPEG inputs, writes its outputs (a `.png` output is a picture:
/// `--normalize`, or `--denormalize`, undone; `--output-grid` draws an
/// activation grid), and prints their shapes and the top-5 classes of a
/// 2-D output; `--profile` adds the per-layer times, `--json`
/// prints one `layerkit-run/1` object instead. A folder (or several files)
/// as `--input` runs each file (`RunBatch`), `--batch N` of them at a time.
enum RunCommand {
    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, command: .run)
        let threads = try arguments.threads()
        return try CPUThreads.with(threads) { try run(arguments, console: console) }
    }

    private static func run(_ arguments: Arguments, console: Console) throws -> Int32 {
        let path = try ModelFiles.modelPath(arguments)
        let units = try ValueParsing.backend(arguments.value("--backend") ?? "auto")
        let image = try ImageOptions(arguments)
        // A .png output is a picture in 0...1: the input's normalization undone, unless told otherwise.
        let denormalization = try ValueParsing.onCommandLine(option: "--denormalize") {
            try arguments.value("--denormalize").map { try PixelNormalization(parsing: $0) } ?? image.steps.normalization
        }
        let batch = try arguments.count("--batch", default: 1, minimum: 1)
        let top = try arguments.count("--top", default: 5, minimum: 1)
        let json = arguments.has("--json")
        let inputSpecs = arguments.values("--input")
        let model = try ModelFiles.load(path, computeUnits: units, layers: arguments.values("--layer"),
                                        console: console)
        let classes = try ClassList(arguments).defaulting(to: model.classLabels)
        // Each run: its input files by input name (one per item of a batch) and its outputs' files.
        var runs: [(inputs: [String: [String]], outputs: [String: [String]], grids: [String: String])] = []
        if let batchFiles = try RunBatch.files(inputSpecs, model: model) {
            guard !arguments.has("--profile") else { throw UsageError("--profile profiles one run: give one input") }
            guard arguments.values("--output-grid").isEmpty else {
                throw UsageError("--output-grid draws one run's output: give one input")
            }
            let folder = arguments.values("--output").last
            guard arguments.values("--output").count <= 1 else { throw UsageError("--output: give one folder for a batch") }
            try RunBatch.check(batch: batch, count: batchFiles.count, input: model.inputs[0])
            let items = try RunBatch.items(batchFiles, model: model, modelPath: path, folder: folder)
            for start in stride(from: 0, to: items.count, by: batch) {
                let group = items[start..<min(items.count, start + batch)]
                runs.append(([model.inputs[0].name: group.map(\.input)],
                             Dictionary(uniqueKeysWithValues: model.outputs.map { o in (o.name, group.compactMap { $0.outputs[o.name] }) }),
                             [:]))
            }
        } else {
            guard batch == 1 else { throw UsageError("--batch N stacks the files of a folder: give --input DIR/") }
            let outputFiles = try ModelFiles.files(arguments.values("--output"), for: model.outputs.map(\.name),
                                                   option: "--output")
            // The files as the reader takes them: a spec is split at `=` only where the model has that name.
            let inputFiles = try ModelFiles.files(inputSpecs, for: model.inputs.map(\.name), option: "--input")
            let gridFiles = try ModelFiles.files(arguments.values("--output-grid"), for: model.outputs.map(\.name),
                                                 option: "--output-grid")
            let reads = ReadFiles(inputFiles.values.sorted() + [path])
            for file in outputFiles.values {
                try TensorFiles.checkOutput(file, notAmong: reads)
            }
            for file in gridFiles.values {
                guard !outputFiles.values.contains(file) else {
                    throw UsageError("--output-grid \(file) is also an --output: give each its own file")
                }
                try TensorFiles.checkOutput(file, notAmong: reads, grid: true)
            }
            runs.append((inputFiles.mapValues { [$0] }, outputFiles.mapValues { [$0] }, gridFiles))
        }

        if let labels = arguments.value("--labels") {
            try classes.check(outputs: model.outputs.compactMap { output in
                output.dimensions.count == 2 ? output.dimensions[1].size.map { (output.name, $0) } : nil
            }, path: labels)
        }
        if !json { console.print(ModelFiles.deviceLine(model.backend)) }
        let profiler = arguments.has("--profile") ? Profiler() : nil
        let progress = ProgressBar("run \(URL(fileURLWithPath: path).lastPathComponent)",
                                   total: runs.count > 1 ? runs.count : 0, console: console)
        var records: [RunRecord.Run] = []
        for run in runs {
            var inputs: [String: TypedTensor] = [:]
            if run.inputs.values.contains(where: { $0.count > 1 }) {
                // A batch: the one input's files, stacked.
                let input = model.inputs[0], files = run.inputs[input.name] ?? []
                let values = try files.map { try ModelFiles.input($0, for: input, image: image, console: console) }
                inputs[input.name] = try RunBatch.stacked(values, files: files, batch: batch, input: input)
            } else {
                inputs = try ModelFiles.inputs(run.inputs.compactMapValues(\.first), of: model, image: image,
                                               console: console)
            }
            let start = ContinuousClock.now
            let outputs = try model.predict(typed: inputs, profiler: profiler)
            let elapsed = Timing.milliseconds(ContinuousClock.now - start)
            let items = run.inputs.values.first?.count ?? 1
            var record = RunRecord.Run(inputs: model.inputs.map { RunRecord.Value(name: $0.name, value: inputs[$0.name],
                                                                              files: run.inputs[$0.name] ?? []) },
                                       ms: elapsed, outputs: [])
            if !json {
                let source = runs.count > 1 ? (run.inputs.values.first ?? []).joined(separator: ", ") : path
                progress.finish()
                console.print("ran \(source) in " + String(format: "%.3f", elapsed) + " ms")
            }
            for description in model.outputs {
                guard let output = outputs[description.name] else { continue }
                let files = run.outputs[description.name] ?? []
                if output.container != nil {
                    // A sequence, optional or map: its own files and summary (ContainerFiles).
                    for file in files { try ContainerFiles.write(output, name: description.name, to: file) }
                    record.outputs.append(RunRecord.Value(name: description.name, value: output, files: files))
                    guard !json else { continue }
                    ContainerFiles.summary(output, name: description.name).forEach { console.print($0) }
                    for file in files { console.print("  wrote \(file)") }
                    continue
                }
                for (i, file) in files.enumerated() {
                    let item = try RunBatch.item(i, of: output, items: items, name: description.name)
                    let written = file.lowercased().hasSuffix(".png")
                        ? TypedTensor(try picture(item.float32Tensor(), file: file, denormalization: denormalization,
                                                  image: image.steps)) : item
                    try TensorFiles.write(written, name: description.name, to: file, png: .image)
                }
                let grid = run.grids[description.name]
                if let grid { try TensorFiles.write(output, name: description.name, to: grid, png: .grid) }
                let best = output.shape.count == 2 && output.elementType.isFloatingPoint
                    ? classes.top(try output.float32Tensor(), k: top) : nil
                let labels = ClassList.labels(of: output, modelLabels: model.classLabels)
                record.outputs.append(RunRecord.Value(name: description.name, value: output, files: files, top: best,
                                                      labels: labels))
                guard !json else { continue }
                let type = output.elementType == .float32 ? "" : " \(output.elementType)"
                console.print("output '\(description.name)': \(Tensor.describe(output.shape))\(type)")
                for (index, label) in (labels ?? []).enumerated().prefix(8) {
                    console.print("  label" + ((labels?.count ?? 0) > 1 ? " [\(index)]" : "") + ": \(label)")
                }
                for (index, row) in (best ?? []).enumerated().prefix(8) {
                    console.print("  top-\(top)" + (best?.count ?? 0 > 1 ? " [\(index)]" : "") + ": "
                                  + row.map(classes.describe).joined(separator: ", "))
                }
                for file in files { console.print("  wrote \(file)") }
                if let grid { console.print("  wrote \(grid) (activation grid)") }
            }
            records.append(record)
            progress.advance()
        }
        progress.finish()
        if json {
            console.print(try JSONText.line(RunRecord(model: path, backend: model.backend, runs: records)))
        }
        if let profiler {
            console.print("")
            console.print("profile of this run (the first: it includes first-touch costs; `layerkit profile` "
                          + "shows a median run):")
            ProfileTable.lines(ProfileSummary(spans: profiler.spans)).forEach { console.print($0) }
        }
        return 0
    }

    /// An output as a `.png` picture takes it: with `denormalization`
    /// undone when it is an image of 1, 3 or 4 channels (anything else is
    /// left for `writeImagePNG` to refuse, naming `.npy`), then, as the
    /// input options prepared a picture, divided by `--scale` (a 0...255
    /// output, a Core ML image's, becomes 0...1; the presets `-1,1` and
    /// `imagenet` already scale with it) and its colours put back in RGB
    /// order from `--channel-order bgr`; a `.npy` output as it is.
    static func picture(_ output: Tensor, file: String, denormalization: PixelNormalization,
                        image options: ImageInputOptions) throws -> Tensor {
        let shape = output.shape
        let channels = shape.count == 4 ? shape[1] : shape.count == 3 ? shape[0] : 0
        let bgr = options.channelOrder == .bgr && channels == 3
        let presetScales = switch denormalization {
        case .signed, .imagenet: true
        default: false
        }
        let scaled = options.scale != 1 && !presetScales
        guard file.lowercased().hasSuffix(".png"), denormalization != .unit || scaled || bgr,
              [1, 3, 4].contains(channels), shape.count == 3 || shape[0] == 1 else { return output }
        var image = shape.count == 3 ? try output.reshaped(to: [1] + shape) : output
        var undone = denormalization
        // imagenet's values are by colour: in a BGR model's order, reversed.
        if bgr, denormalization == .imagenet {
            undone = .meanStd(mean: PixelNormalization.imagenetMean.reversed(), std: PixelNormalization.imagenetStd.reversed())
        }
        image = try ValueParsing.onCommandLine(option: "--denormalize") { try image.denormalized(undone) }
        if scaled {
            for i in 0..<image.count { image[i] /= options.scale }
        }
        if bgr {
            let plane = image.count / 3
            let pixels = image.values
            for channel in 0..<3 {
                for i in 0..<plane { image[channel * plane + i] = pixels[(2 - channel) * plane + i] }
            }
        }
        return image
    }
}

/// What `layerkit run --json` prints (fields in Docs/JSON.md).
struct RunRecord: Encodable {
    let schema = "layerkit-run/1"
    let model: String
    let cpu: BenchRecord.CPU
    let device: BenchRecord.Device?
    /// One per model run: one for plain inputs, one per file or `--batch` group for a folder.
    let runs: [Run]

    struct Run: Encodable {
        let inputs: [Value]
        /// The run's wall time (`Model.predict`).
        let ms: Double
        var outputs: [Value]
    }

    struct Value: Encodable {
        let name: String
        /// The element type ("float32", "int64", ...).
        let type: String
        let shape: [Int]
        /// Files read (inputs) or written (outputs), one per batch item.
        let files: [String]
        /// For a 2-D float output: per row, the top classes, largest first.
        var top: [[Class]]? = nil
        /// For a classifier's label output: per row, its class label (a Core ML classifier's).
        var labels: [String]? = nil

        init(name: String, value: TypedTensor?, files: [String], top: [[Class]]? = nil, labels: [String]? = nil) {
            // A sequence, optional or map: its form ("sequence(tensor(float32))"), and no shape.
            let type = value.map { $0.container != nil ? $0.form.description : $0.elementType.description }
            (self.name, self.type, shape) = (name, type ?? "", value.map { $0.container != nil ? [] : $0.shape } ?? [])
            (self.files, self.top, self.labels) = (files, top, labels)
        }
    }

    struct Class: Encodable {
        let index: Int
        /// The output's value (a logit, say).
        let value: Float
        /// Its line of `--labels`, when given.
        let label: String?
        /// The row's softmax at this class, with `--softmax`.
        let probability: Float?
    }

    init(model: String, backend: Backend, runs: [Run]) {
        (self.model, self.runs) = (model, runs)
        cpu = .current
        device = BenchRecord.Device(backend.gpu)
    }
}
