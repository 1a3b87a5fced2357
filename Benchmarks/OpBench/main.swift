// OpBench: every element-wise op of the catalog (or one, --op), default
// parameters, on a seeded uniform tensor in the op's input range: the CPU
// evaluator on 1 and 2 threads and the GPU kernel alone (timestamps).
// Benchmarks/compare_ops_onnxruntime.py runs it with --json next to
// onnxruntime. The CPU result of each op is checked against the GPU's
// (fp16 storage, so to 1e-2).
import BenchmarkSupport
import LayerKitCommands
import Foundation
import LayerKit

/// The largest CPU-GPU disagreement accepted: fp16 rounds inputs and outputs.
let tolerance: Float = 1e-2

do {
    let options = try Options(arguments: Array(CommandLine.arguments.dropFirst()))
    if options.list {
        OpDefinition.catalog.forEach { print($0.name) }
        exit(0)
    }
    let gpu = options.gpu ? benchmarkGPUContext() : (context: nil, note: "GPU: not asked for (--no-gpu)")
    var rows: [BenchRow] = []
    var failures: [String] = []
    for definition in options.ops {
        let input = try Tensor.uniform(shape: options.shape, in: definition.inputRange, seed: 1)
        let layer = try makeLayer(definition, channels: try input.nchw().c)
        let op = try opRows(layer, input: input, context: gpu.context, options: options)
        rows += op.rows
        if let worst = op.disagreement, !(worst <= tolerance) {
            failures.append("\(definition.name): CPU and GPU differ by up to \(worst) (relative, floor 1)")
        }
    }
    if options.json {
        try printJSON(rows)
        FileHandle.standardError.write(Data((gpu.note + "\n").utf8))  // the device, for scripts to show
    } else {
        print("\(Tensor.describe(options.shape)) Float32, default parameters (weights \(weightValue) per channel), "
            + "CPU kernels: \(CPUEvaluator.instructionSet), \(ProcessInfo.processInfo.activeProcessorCount) cores; "
            + "medians of \(options.runs) runs after \(options.warmup) warm-up")
        print(gpu.note + "; GPU kernel rows: threads 0")
        printTable(rows, baselines: [])
    }
    if !failures.isEmpty {
        FileHandle.standardError.write(Data(("OpBench: " + failures.joined(separator: "\nOpBench: ") + "\n").utf8))
        exit(1)
    }
} catch {
    FileHandle.standardError.write(Data("OpBench: \(error)\n".utf8))
    exit(2)
}
