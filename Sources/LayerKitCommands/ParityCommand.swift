import Foundation
import LayerKit

/// `layerkit parity`: the same seeded, fp16-rounded input through the GPU
/// and the CPU evaluator, compared element by element; `--all` does it for
/// every catalog op and prints one table.
enum ParityCommand {
    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, command: .parity)
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

    /// The GPU both sides of a comparison need; its absence is an error.
    static func openGPU() throws -> GPUContext {
        do {
            return try GPUContext()
        } catch {
            throw LayerKitError.gpuUnavailable("parity needs a GPU: \(error)")
        }
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
