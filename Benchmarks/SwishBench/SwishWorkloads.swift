import BenchmarkSupport
import LayerKitCommands
import Foundation
import LayerKit

/// The Core ML article's first CPU Swish: a plain loop over the tensor's
/// subscript with Foundation's exp. The baseline the evaluator is held to.
func naiveSwish(_ input: Tensor, into output: Tensor) {
    for i in 0..<input.count {
        let x = input[i]
        output[i] = x / (1 + exp(-x))
    }
}

/// The article's loop as written against `MLMultiArray`, whose subscript
/// reads and writes `NSNumber`s: one boxed value in and one out per element.
func boxedNaiveSwish(_ input: Tensor, into output: Tensor) {
    for j in 0..<input.count {
        let x = NSNumber(value: input[j]).floatValue
        output[j] = NSNumber(value: x / (1 + exp(-x))).floatValue
    }
}

/// The row name of `boxedNaiveSwish`.
let boxedNaiveName = "naive, NSNumber-boxed (article)"

/// Measures the CPU variants of Swish (beta = 1) on `options.shape`: the
/// naive loop, CPUEvaluator on 1 and 2 threads, and a plain copy as the
/// bandwidth ceiling. Other sections (GPU) append their rows the same way.
func cpuSwishRows(options: Options, input: Tensor) throws -> [BenchRow] {
    let output = try Tensor(shape: input.shape)
    var rows: [BenchRow] = []
    func add(_ name: String, threads: Int, runs: Int, warmup: Int, _ body: () throws -> Void) throws {
        if let stats = TimingStats(samples: try Timing.measure(warmup: warmup, runs: runs, body)) {
            rows.append(BenchRow(name: name, threads: threads, stats: stats,
                                 elements: input.count, bytes: 8 * input.count))
        }
    }

    try add(boxedNaiveName, threads: 1, runs: 3, warmup: 0) {
        boxedNaiveSwish(input, into: output)
    }
    try add("naive", threads: 1, runs: max(3, options.runs / 3), warmup: min(1, options.warmup)) {
        naiveSwish(input, into: output)
    }
    let naive = output.values
    let swish = try Swish(beta: 1)
    for threads in [1, 2] {
        try add("evaluator", threads: threads, runs: options.runs, warmup: options.warmup) {
            try swish.evaluate(inputs: [input], outputs: [output], threadCount: threads)
        }
    }
    let evaluated = output.values
    for threads in [1, 2] {
        try add("copy (ceiling)", threads: threads, runs: options.runs, warmup: options.warmup) {
            copyTensor(input, into: output, threads: threads)
        }
    }
    // The timings only count if the results agree.
    let worst = zip(naive, evaluated).map { abs($0 - $1) / max(abs($0), 1e-30) }.max() ?? 0
    guard worst < 1e-5 else {
        throw LayerKitError.invalidParameter("evaluator and naive loop disagree: max rel diff \(worst)")
    }
    return rows
}
