import Foundation
import LayerKit

/// `layerkit train model.onnx --data ... --labels ... --loss ... --trainable
/// ... --output updated.onnx`: trains the chosen parameters (`UpdateTask`;
/// an updatable Core ML model as its file says, written back as an
/// `.mlmodel`: `layerkit train model.mlmodel --data ... --labels ...
/// --output updated.mlmodel`),
/// printing one line per epoch (`epoch 3/5  loss 0.1234  1.23 s`; on a
/// terminal a progress bar is drawn on standard error as well, and erased
/// before each line), then writes the updated model, with `--checkpoint` a
/// checkpoint and with `--plot` the loss curve (`LossPlot`), and prints where
/// the backward work ran; with `--stats`, a line after each step (its time,
/// and on a GPU the images and buffers it created and the bytes it moved:
/// `TrainingStepCounts`). Every option and file is checked first; a run
/// that fails writes nothing.
enum TrainCommand {
    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, command: .train)
        let threads = try arguments.threads()
        return try CPUThreads.with(threads) { try run(arguments, threads: threads, console: console) }
    }

    private static func run(_ arguments: Arguments, threads: Int?, console: Console) throws -> Int32 {
        let path = try ModelFiles.modelPath(arguments)
        let data = try arguments.required("--data"), labels = try arguments.required("--labels")
        let output = try arguments.required("--output")
        try TrainOptions.check(arguments)
        let units = try ValueParsing.backend(arguments.value("--backend") ?? "auto")
        let normalization = try ValueParsing.onCommandLine(option: "--normalize") {
            try PixelNormalization(parsing: arguments.value("--normalize") ?? "0,1")
        }
        let (checkpoint, resume, plot) = (arguments.value("--checkpoint"), arguments.value("--resume"),
                                          arguments.value("--plot"))
        // A Core ML model is written back as one; an updatable one brings its own training settings.
        let coreML = UpdatedModelFile.isCoreML(path)
        try checkFiles(model: path, data: data, labels: labels, resume: resume, output: output,
                       checkpoint: checkpoint, plot: plot, modelExtension: coreML ? "mlmodel" : "onnx")
        let options = try TrainOptions(arguments, defaults: try coreML ? fileSettings(path, arguments) : nil)

        let layers = arguments.values("--layer")
        let registry = try ModelFiles.registry(layers)
        let provider = try TrainData.provider(data: data, labels: labels, model: path, layers: layers,
                                              loss: options.configuration.loss, normalization: normalization,
                                              console: console)
        let configuration = options.configuration
        let json = arguments.has("--json")
        let stats = arguments.has("--stats")
        guard !(stats && json) else { throw UsageError("--stats prints a line per step: drop it or --json") }
        let log = TrainingLog(epochs: configuration.epochs, console: console,
                              label: "train \(URL(fileURLWithPath: path).lastPathComponent)", printsEpochs: !json)
        // The task's own backend, but with the command's notices (held until it ends, as every command's).
        let backend = try Backend(computeUnits: units, timestamps: false, threads: threads,
                                  notice: { console.note($0) })
        let task = try UpdateTask(modelAt: URL(fileURLWithPath: path), data: provider, configuration: configuration,
                                  backend: backend, registry: registry, events: { log.record($0) })
        if stats { log.stepCounts = { [unowned task] in task.lastStep } }
        if let resume { try task.resume(fromCheckpoint: URL(fileURLWithPath: resume)) }
        if !json {
            console.print(ModelFiles.deviceLine(task.backend))
            console.print("train \(path): \(provider.count) items, batches of \(configuration.batchSize), "
                          + "\(configuration.loss.rawValue) loss, \(configuration.optimizer.algorithm.rawValue) at "
                          + "lr \(configuration.optimizer.learningRate)" + (resume.map { ", resumed from \($0)" } ?? ""))
            console.print("trainable: " + task.trainableNames.joined(separator: ", "))
        }
        defer { log.finish() }  // the bar is erased on an error too
        try task.run()
        log.finish()

        try task.writeModel(to: URL(fileURLWithPath: output))
        if let checkpoint { try task.writeCheckpoint(to: URL(fileURLWithPath: checkpoint)) }
        if let plot {
            let settings = "\(configuration.optimizer.algorithm.rawValue), lr \(configuration.optimizer.learningRate), "
                + "batches of \(configuration.batchSize), \(provider.count) items, trainable: "
                + task.trainableNames.joined(separator: ", ")
            let svg = LossPlot.svg(log.history, title: "layerkit train \(URL(fileURLWithPath: path).lastPathComponent)",
                                   subtitle: [Printable.elided(settings, limit: 120)],
                                   lossName: configuration.loss.rawValue)
            try ReportFile.write(Data(svg.utf8), to: plot)
        }
        if json {
            console.print(try JSONText.line(TrainRecord(
                model: path, output: output, checkpoint: checkpoint, plot: plot, resumedFrom: resume,
                items: provider.count, trainable: task.trainableNames, configuration: configuration, log: log,
                report: task.placementReport)))
            return 0
        }
        console.print("wrote \(output)")
        if let checkpoint { console.print("wrote \(checkpoint) (checkpoint)") }
        if let plot { console.print("wrote \(plot) (loss curve)") }
        console.print("")
        PlacementSummary.lines(task.placementReport).forEach { console.print($0) }
        return 0
    }

    /// The training settings of an updatable Core ML model's file; nil for
    /// one that is not updatable when `--loss` and `--trainable` say how to
    /// train it (without them, why it is not updatable is the error).
    private static func fileSettings(_ path: String, _ arguments: Arguments) throws -> TrainingConfiguration? {
        do {
            return try TrainingConfiguration(updatableModelAt: URL(fileURLWithPath: path))
        } catch let error as LayerKitError {
            guard arguments.value("--loss") == nil || arguments.value("--trainable") == nil else { return nil }
            throw error.suffixed(" (or give --loss and --trainable)")
        }
    }

    /// Throws unless each file written is of its kind (`.onnx` or for a
    /// Core ML model `.mlmodel`, `.svg`), is
    /// none of the files read (`ReadFiles`: the model and its external-data
    /// files, the data file or every file of the data folder, the labels,
    /// the checkpoint resumed), and no two are the same file.
    private static func checkFiles(model: String, data: String, labels: String, resume: String?, output: String,
                                   checkpoint: String?, plot: String?, modelExtension: String) throws {
        let reads = ReadFiles([model, data, labels] + (resume.map { [$0] } ?? []))
        try ReportFile.check(output, fileExtension: modelExtension, notAmong: reads)
        var written = [("--output", output)]
        if let checkpoint {
            try reads.refuseOverwrite(of: checkpoint)
            written.append(("--checkpoint", checkpoint))
        }
        if let plot {
            try ReportFile.check(plot, fileExtension: "svg", notAmong: reads)
            written.append(("--plot", plot))
        }
        for (i, (option, file)) in written.enumerated() {
            for (other, earlier) in written[..<i] where file == earlier || FileIdentity(file).map({ $0 == FileIdentity(earlier) }) == true {
                throw UsageError("\(option) \(file) is also \(other): give each its own file")
            }
        }
    }
}
