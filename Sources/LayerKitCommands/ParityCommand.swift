import Foundation
import LayerKit

/// `layerkit parity`: the same seeded, fp16-rounded input through the GPU
/// and the CPU evaluator, compared element by element.
enum ParityCommand {
    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, valued: LayerOptions.valued.union(["--shape", "--range", "--seed"]))
        let shape = try ValueParsing.shape(arguments.value("--shape") ?? "1x6x256x256")
        let range = try ValueParsing.range(arguments.value("--range") ?? "-10,10")
        let seed = try ValueParsing.seed(arguments.value("--seed") ?? "1")
        let options = try LayerOptions(arguments)

        let gpuBackend = Backend(computeUnits: .cpuAndGPU)
        guard let gpu = gpuBackend.gpu else {
            throw LayerKitError.gpuUnavailable("parity needs a GPU: \(gpuBackend.gpuUnavailableReason ?? "none")")
        }
        guard options.layer.hasGPUImplementation else {
            throw LayerKitError.unsupported("\(options.name) has no GPU implementation to compare")
        }
        // Both sides read the same fp16-rounded values: the GPU stores fp16.
        let input = try Tensor.uniform(shape: shape, in: range, seed: seed).roundedToHalf()
        let gpuRun = try gpuBackend.run(options.layer, inputs: [input])
        let cpuRun = try Backend(computeUnits: .cpuOnly).run(options.layer, inputs: [input])
        guard let gpuOut = gpuRun.outputs.first, let cpuOut = cpuRun.outputs.first else {
            throw LayerKitError.shapeMismatch("\(options.name) produced no output")
        }
        let report = try ParityReport(gpu: gpuOut, cpu: cpuOut)
        console.print("\(options.name) [\(options.parameterText)] shape \(Tensor.describe(shape)) "
                      + "range [\(range.lowerBound), \(range.upperBound)] seed \(seed)")
        console.print("device: \(gpu.deviceInfo.name) (\(gpu.deviceInfo.kind.rawValue))")
        for line in describe(report, input: input, gpu: gpuOut, cpu: cpuOut) { console.print(line) }
        return report.passed ? 0 : 1
    }

    /// The report's lines, ending with the PASS/FAIL verdict.
    static func describe(_ report: ParityReport, input: Tensor, gpu: Tensor, cpu: Tensor) -> [String] {
        var lines = [
            "elements:              \(report.count)",
            "max abs error:         \(scientific(report.maxAbsError))",
            "max rel error:         \(scientific(report.maxRelError))  (|gpu-cpu| / max(1,|cpu|))",
            "max fp16 ulps:         \(report.maxULPs)",
            "NMSE:                  \(scientific(report.nmse))",
            "non-finite mismatches: \(report.nonFiniteMismatches)",
        ]
        if let worst = report.worstIndex {
            lines.append("worst element:         #\(worst): x=\(input[worst]) gpu=\(gpu[worst]) cpu=\(cpu[worst])")
        }
        let rule = "|gpu-cpu| <= \(report.tolerance) * max(1,|cpu|)"
        lines.append(report.passed
            ? "PASS: every element within \(rule)"
            : "FAIL: \(report.failures + report.nonFiniteMismatches) of \(report.count) elements outside \(rule)")
        return lines
    }

    static func scientific(_ value: Double) -> String { String(format: "%.3e", value) }
}
