import Foundation
import LayerKit

/// `layerkit run model.onnx --input ...`: runs an ONNX model on `.npy` or
/// PNG inputs, writes its outputs, and prints their shapes and the top-5
/// classes of a 2-D output; `--profile` adds the per-layer times.
enum RunCommand {
    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, command: .run)
        let path = try ModelFiles.modelPath(arguments)
        let units = try ValueParsing.backend(arguments.value("--backend") ?? "auto")
        let normalization = try ValueParsing.onCommandLine {
            try PixelNormalization(parsing: arguments.value("--normalize") ?? "0,1")
        }
        let resize = try arguments.value("--resize").map(ValueParsing.size)
        let inputSpecs = arguments.values("--input")
        guard !inputSpecs.isEmpty else { throw UsageError("missing --input") }
        let model = try ModelFiles.load(path, computeUnits: units, layers: arguments.values("--layer"),
                                        console: console)
        let outputFiles = try ModelFiles.files(arguments.values("--output"), for: model.outputs.map(\.name),
                                               option: "--output")
        // The files as the reader takes them: a spec is split at `=` only where the model has that name.
        let inputFiles = try ModelFiles.files(inputSpecs, for: model.inputs.map(\.name), option: "--input")
        for file in outputFiles.values {
            try TensorFiles.checkOutput(file, notAmong: Array(inputFiles.values) + [path])
        }
        let inputs = try ModelFiles.inputs(inputFiles, of: model, resize: resize, normalization: normalization,
                                           console: console)

        console.print(ModelFiles.deviceLine(model.backend))
        let profiler = arguments.has("--profile") ? Profiler() : nil
        let start = ContinuousClock.now
        let outputs = try model.predict(inputs: inputs, profiler: profiler)
        let elapsed = Timing.milliseconds(ContinuousClock.now - start)
        console.print("ran \(path) in " + String(format: "%.3f", elapsed) + " ms")
        for description in model.outputs {
            guard let output = outputs[description.name] else { continue }
            console.print("output '\(description.name)': \(Tensor.describe(output.shape))")
            if output.shape.count == 2 { printTop5(output, console: console) }
            if let file = outputFiles[description.name] {
                try TensorFiles.write(output, to: file)
                console.print("  wrote \(file)")
            }
        }
        if let profiler {
            console.print("")
            console.print("profile of this run (the first: it includes first-touch costs; `layerkit profile` "
                          + "shows a median run):")
            ProfileTable.lines(ProfileSummary(spans: profiler.spans)).forEach { console.print($0) }
        }
        return 0
    }

    /// The five largest values of each row (batch item) of an N×K output.
    private static func printTop5(_ output: Tensor, console: Console) {
        let (rows, columns) = (output.shape[0], output.shape[1])
        for row in 0..<min(rows, 8) {
            let values = (0..<columns).map { (index: $0, value: output[row * columns + $0]) }
            let top = values.sorted { $0.value > $1.value || ($0.value == $1.value && $0.index < $1.index) }.prefix(5)
            console.print("  top-5" + (rows > 1 ? " [\(row)]" : "") + ": "
                          + top.map { "\($0.index) (\(String(format: "%.4f", $0.value)))" }.joined(separator: ", "))
        }
    }
}
