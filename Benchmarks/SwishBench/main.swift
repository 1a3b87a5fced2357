// SwishBench: Swish on a seeded uniform [-10, 10] tensor, each variant timed
// side by side. Top-level code stays thin; the timed loops live in
// nonisolated functions (see SwishWorkloads.swift).
import BenchmarkSupport
import LayerKitCommands
import Foundation
import LayerKit

do {
    let options = try Options(arguments: Array(CommandLine.arguments.dropFirst()))
    let input = try Tensor.uniform(shape: options.shape, in: -10...10, seed: 1)
    let gpu = try gpuSwishRows(options: options, input: input)
    let rows = try cpuSwishRows(options: options, input: input) + gpu.rows
    if options.json {
        try printJSON(rows)
    } else {
        print("Swish \(Tensor.describe(options.shape)) Float32, CPU kernels: \(CPUEvaluator.instructionSet), "
            + "\(ProcessInfo.processInfo.activeProcessorCount) cores; medians of \(options.runs) runs "
            + "after \(options.warmup) warm-up (naive: fewer)")
        print(gpu.note + "; GPU rows: threads 0")
        printTable(rows, baselines: [("article", boxedNaiveName), ("naive", "naive")])
    }
} catch {
    FileHandle.standardError.write(Data("SwishBench: \(error)\n".utf8))
    exit(2)
}
