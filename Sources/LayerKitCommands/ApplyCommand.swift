import Foundation
import LayerKit

/// `layerkit apply`: one layer over a `.npy`/`.png` input into a
/// `.npy`/`.png` output.
enum ApplyCommand {
    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, command: .apply)
        let units = try ValueParsing.backend(arguments.value("--backend") ?? "auto")
        let inputPath = try arguments.required("--input")
        let outputPath = try arguments.required("--output")
        let options = try LayerOptions(arguments)
        try TensorFiles.checkOutput(outputPath, notAmong: ReadFiles([inputPath] + options.weightFiles))
        let input = try TensorFiles.read(inputPath)

        let backend = try Backend(computeUnits: units, threads: try arguments.threads(), notice: { console.note($0) })
        let start = ContinuousClock.now
        // In place: the layers are per-element, so the input's memory takes the
        // result and the run needs no second tensor (peak memory: one tensor).
        let inPlace = options.layer is PerElementLayer
        let result = try backend.run(options.layer, inputs: [input], outputs: inPlace ? [input] : nil)
        let elapsed = ContinuousClock.now - start
        guard let output = result.outputs.first else {
            throw LayerKitError.shapeMismatch("\(options.name) produced no output")
        }
        try TensorFiles.write(output, to: outputPath, png: .grid)
        let place = result.placement.isGPU ? "GPU (\(backend.gpu?.deviceInfo.name ?? "?"))" : "CPU"
        console.print("\(options.name) [\(options.parameterText)] on \(place): "
                      + "\(Tensor.describe(input.shape)) -> \(Tensor.describe(output.shape)) in "
                      + String(format: "%.3f", Timing.milliseconds(elapsed)) + " ms, wrote \(outputPath)")
        return 0
    }
}
