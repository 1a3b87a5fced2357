import Foundation
import LayerKit

/// `layerkit parity`: the same seeded, fp16-rounded input through the GPU
/// and the CPU evaluator, compared element by element; `--all` does it for
/// every catalog op and prints one table; with a model, its outputs.
enum ParityCommand {
    /// The options of one layer's (or `--all`'s) comparison, and of a model's.
    static let layerOnly = ["--op", "--expr", "--param", "--weights", "--shape", "--range", "--seed", "--all"]
    static let modelOnly = ["--input", "--layer"] + ImageOptions.names

    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, command: .parity)
        if let path = arguments.positional.first {
            if let option = layerOnly.first(where: arguments.has) {
                throw UsageError("\(option) compares one layer; with a model (\(path)) parity compares the model's "
                                 + "outputs: drop \(option) or the model")
            }
            return try model(path, arguments, console: console)
        }
        if let option = modelOnly.first(where: arguments.has) {
            throw UsageError("\(option) is for a model: give MODEL.onnx (layerkit help parity)")
        }
        let seed = try ValueParsing.seed(arguments.value("--seed") ?? "1")
        let threads = try arguments.threads()
        let context = try openGPU()
        if arguments.has("--all") {
            guard arguments.value("--op") == nil, arguments.value("--expr") == nil, arguments.value("--range") == nil else {
                throw UsageError("--all runs every op over its own input range: drop --op, --expr and --range")
            }
            let shape = try ValueParsing.shape(arguments.value("--shape") ?? "1x6x64x64")
            return try CPUThreads.with(threads) {
                try ParityTable.run(shape: shape, seed: seed, context: context, console: console)
            }
        }
        let shape = try ValueParsing.shape(arguments.value("--shape") ?? "1x6x256x256")
        let range = try ValueParsing.range(arguments.value("--range") ?? "-10,10")
        let options = try LayerOptions(arguments)
        // Both sides read the same fp16-rounded values: the GPU stores fp16.
        let input = try Tensor.uniform(shape: shape, in: range, seed: seed).roundedToHalf()
        let (report, gpu, cpu) = try CPUThreads.with(threads) {
            try ParityReport.compare(options.layer, input: input, context: context)
        }
        console.print("\(options.name) [\(options.parameterText)] shape \(Tensor.describe(shape)) "
                      + "range [\(range.lowerBound), \(range.upperBound)] seed \(seed)")
        console.print("device: \(context.deviceInfo.name) (\(context.deviceInfo.kind.rawValue))")
        for line in describe(report, input: input, gpu: gpu, cpu: cpu) { console.print(line) }
        return report.passed ? 0 : 1
    }

    /// `parity MODEL.onnx`: the model loaded for the GPU and for the CPU,
    /// run on the same fp16-rounded inputs (`--input` files, or seeded), a
    /// report per output; exit status 1 when any fails.
    static func model(_ path: String, _ arguments: Arguments, console: Console) throws -> Int32 {
        let threads = try arguments.threads()
        let layers = arguments.values("--layer")
        let gpuModel: Model
        do {
            gpuModel = try ModelFiles.load(path, computeUnits: .gpu, threads: threads, layers: layers, console: console)
        } catch LayerKitError.gpuUnavailable(let why) {
            throw LayerKitError.gpuUnavailable("parity needs a GPU: \(why)")
        }
        let cpuModel = try ModelFiles.load(path, computeUnits: .cpuOnly, threads: threads, layers: layers,
                                           console: console)
        let given = try ModelFiles.inputsOrSeeded(arguments, of: cpuModel, console: console)
        let inputs = try ModelParity.rounded(given.inputs)
        // The CPU reference is checked value by value: the GPU stores each in fp16.
        let reference = try cpuModel.predictCheckingHalfRange(inputs: inputs)
        let outputs = try ModelParity.compare(gpu: gpuModel.predict(inputs: inputs), cpu: reference.outputs,
                                              twin: cpuModel.predictStoringHalf(inputs: inputs),
                                              outputs: cpuModel.outputs.map(\.name))
        console.print("model: \(path)")
        console.print(ModelFiles.deviceLine(gpuModel.backend))
        for input in cpuModel.inputs {
            let source = given.files[input.name] ?? "seeded uniform [0, 1)"
            let kept = reference.findings.contains { $0.origin == .input && $0.value == input.name }
            console.print("input '\(input.name)' \(Tensor.describe(inputs[input.name]?.shape ?? [])): \(source), "
                          + (kept ? "as given (fp16 cannot keep it)" : "rounded to fp16"))
        }
        for finding in reference.findings { console.print(ModelParity.warning(finding)) }
        for output in outputs {
            console.print("")
            console.print("output '\(output.name)' \(Tensor.describe(output.cpu.shape)):")
            var lines = describe(output.report, input: nil, gpu: output.gpu, cpu: output.cpu)
            if let twinError = output.twinError {
                lines.insert("fp16 twin error:       \(scientific(twinError))  (the CPU storing every value in fp16, "
                             + "as the GPU does; bound max(1e-3, 2 x this))", at: lines.count - 1)
            }
            for line in lines { console.print("  " + line) }
        }
        let failed = outputs.filter { !$0.report.passed }.map(\.name)
        console.print("")
        console.print(failed.isEmpty ? "PASS: all \(outputs.count) output\(outputs.count == 1 ? "" : "s") within the parity rule"
                      : "FAIL: \(failed.count) of \(outputs.count) outputs outside the parity rule (\(failed.joined(separator: ", ")))")
        return failed.isEmpty ? 0 : 1
    }

    /// The GPU both sides of a comparison need; its absence is an error.
    static func openGPU() throws -> GPUContext {
        do {
            return try GPUContext()
        } catch {
            throw LayerKitError.gpuUnavailable("parity needs a GPU: \(error)")
        }
    }

    /// The report's lines, ending with the PASS/FAIL verdict; the worst
    /// element shows its input value when the comparison is per element.
    static func describe(_ report: ParityReport, input: Tensor?, gpu: Tensor, cpu: Tensor) -> [String] {
        var lines = [
            "elements:              \(report.count)",
            "max abs error:         \(scientific(report.maxAbsError))",
            "max rel error:         \(scientific(report.maxRelError))  (|gpu-cpu| / max(1,|cpu|))",
            "max fp16 ulps:         \(report.maxULPs)",
            "NMSE:                  \(scientific(report.nmse))",
            "non-finite mismatches: \(report.nonFiniteMismatches)",
        ]
        if let worst = report.worstIndex {
            lines.append("worst element:         #\(worst): " + (input.map { "x=\($0[worst]) " } ?? "")
                         + "gpu=\(gpu[worst]) cpu=\(cpu[worst])")
        }
        let rule = "|gpu-cpu| <= \(String(format: "%.3g", report.tolerance)) * max(1,|cpu|)"
        let outside = report.failures + report.nonFiniteMismatches
        lines.append(report.passed
            ? "PASS: every element within \(rule), NMSE <= \(ParityReport.maxNMSE)"
            : outside > 0 ? "FAIL: \(outside) of \(report.count) elements outside \(rule)"
            : "FAIL: NMSE \(scientific(report.nmse)) > \(ParityReport.maxNMSE): the GPU lost the values "
                + "(each element is within \(rule) only because the values are far below 1)")
        return lines
    }

    static func scientific(_ value: Double) -> String { String(format: "%.3e", value) }
}
