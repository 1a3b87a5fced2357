// ConvBench: the Conv and Gemm layers' CPU evaluators on 1 and 2 threads,
// one row per workload and thread count, output preallocated (as a model
// runs them). Benchmarks/compare_conv_onnxruntime.py runs it with --json
// next to onnxruntime on the same workloads.
//
//   ConvBench [--repeat N] [--warmup N] [--json] WORKLOAD...
//     conv=NxCxHxW,M,K,STRIDE,PAD[,GROUP]   K x K kernel, PAD on every side
//     gemm=N,K,M                            Y[N, M] = A[N, K] * B[K, M] + C[M]
import BenchmarkSupport
import LayerKitCommands
import Foundation
import LayerKit

let usage = """
    usage: ConvBench [--repeat N] [--warmup N] [--json] WORKLOAD...
      conv=NxCxHxW,M,K,STRIDE,PAD[,GROUP]   a K x K convolution with bias, PAD on every side
      gemm=N,K,M                            a Gemm with B [K, M] and C [M]
    """

/// A layer set up to run on a seeded input.
struct Workload {
    let name: String
    let layer: any Layer
    let input: Tensor
    let multiplyAdds: Int
    let setThreads: (Int) -> Void

    init(_ spec: String) throws {
        let parts = spec.split(separator: "=", maxSplits: 1).map(String.init)
        let numbers = parts.count == 2 ? parts[1].split(separator: ",").map(String.init) : []
        func int(_ i: Int) throws -> Int { try ValueParsing.count(i < numbers.count ? numbers[i] : "", option: spec, minimum: 0) }
        switch parts.first {
        case "conv" where (5...6).contains(numbers.count):
            let shape = try ValueParsing.shape(numbers[0])
            let (m, k, stride, pad) = (try int(1), try int(2), try int(3), try int(4))
            let group = numbers.count == 6 ? try int(5) : 1
            let conv = try Convolution(
                weights: Tensor.uniform(shape: [m, shape[1] / group, k, k], in: -1...1, seed: 2),
                bias: Tensor.uniform(shape: [m], in: -1...1, seed: 3), strides: [stride, stride],
                padding: .explicit([pad, pad, pad, pad]), group: group)
            (layer, input, setThreads) = (conv, try Tensor.uniform(shape: shape, in: -1...1, seed: 1), { conv.threadCount = $0 })
            let out = try conv.outputShapes(forInputShapes: [shape])[0]
            multiplyAdds = out.reduce(1, *) * shape[1] / group * k * k
        case "gemm" where numbers.count == 3:
            let (n, k, m) = (try int(0), try int(1), try int(2))
            let gemm = try Gemm(b: Tensor.uniform(shape: [k, m], in: -1...1, seed: 2),
                                c: Tensor.uniform(shape: [m], in: -1...1, seed: 3))
            (layer, input, setThreads) = (gemm, try Tensor.uniform(shape: [n, k], in: -1...1, seed: 1), { gemm.threadCount = $0 })
            multiplyAdds = n * k * m
        default:
            throw LayerKitError.invalidParameter("bad workload '\(spec)'\n\(usage)")
        }
        name = spec
    }
}

do {
    var (runs, warmup, json, workloads) = (50, 10, false, [Workload]())
    var rest = CommandLine.arguments.dropFirst()
    while let argument = rest.popFirst() {
        switch argument {
        case "--repeat": runs = try ValueParsing.count(rest.popFirst() ?? "", option: argument, minimum: 1)
        case "--warmup": warmup = try ValueParsing.count(rest.popFirst() ?? "", option: argument, minimum: 0)
        case "--json": json = true
        case "-h", "--help": throw LayerKitError.invalidParameter(usage)
        default: workloads.append(try Workload(argument))
        }
    }
    guard !workloads.isEmpty else { throw LayerKitError.invalidParameter("no workload\n\(usage)") }
    var rows: [BenchRow] = []
    for workload in workloads {
        let output = try Tensor(shape: workload.layer.outputShapes(forInputShapes: [workload.input.shape])[0])
        for threads in [1, 2] {
            workload.setThreads(threads)
            let samples = try Timing.measure(warmup: warmup, runs: runs) {
                try workload.layer.evaluate(inputs: [workload.input], outputs: [output])
            }
            guard let stats = TimingStats(samples: samples) else { continue }
            // elements: multiply-adds, so Gelem/s reads as G multiply-adds/s.
            rows.append(BenchRow(name: workload.name, threads: threads, stats: stats, elements: workload.multiplyAdds,
                                 bytes: (workload.input.count + output.count) * 4))
        }
    }
    if json {
        try printJSON(rows)
    } else {
        print("medians of \(runs) runs after \(warmup) warm-up, CPU evaluator, "
            + "\(ProcessInfo.processInfo.activeProcessorCount) cores; Gelem/s = G multiply-adds/s")
        printTable(rows, baselines: [])
    }
} catch {
    FileHandle.standardError.write(Data("ConvBench: \(error)\n".utf8))
    exit(2)
}
