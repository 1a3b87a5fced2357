// FusionBench: chains of three element-wise ops on 1x64x256x256 Float32,
// run unfused (three layers: three passes over memory, or three dispatches
// through intermediate images) and fused (one FusedLayer: one pass, one
// dispatch), next to the chain's middle op alone, on the CPU (1 and 2
// threads) and the GPU (kernels by timestamps), in one run. Two chains: one
// whose ops are memory-bound (Linear, Relu, Clip), where fusion saves most,
// and one with transcendental math (Linear, Swish, Tanh).
//
//   swift run -c release FusionBench [--repeat N] [--warmup N] [--shape NxCxHxW]
import BenchmarkSupport
import LayerKitCommands
import Foundation
import LayerKit

func op(_ name: String, _ parameters: [String: String] = [:]) throws -> ElementwiseLayer {
    guard let definition = OpDefinition.catalog.first(where: { $0.name == name }) else {
        throw LayerKitError.unknownOp(name)
    }
    return try ElementwiseLayer(definition: definition, parameters: parameters)
}

/// Times the CPU variants: one op, the chain op by op, the chain fused.
func cpuRows(label: String, chain: [ElementwiseLayer], fused: FusedLayer, input: Tensor, runs: Int,
             warmup: Int) throws -> [BenchRow] {
    let (a, b) = (try Tensor(shape: input.shape), try Tensor(shape: input.shape))
    var rows: [BenchRow] = []
    for threads in [1, 2] {
        let variants: [(String, () throws -> Void)] = [
            ("cpu \(label): \(chain[1].layerName) alone", {
                try chain[1].evaluate(inputs: [input], outputs: [a], threadCount: threads)
            }),
            ("cpu \(label): 3 ops unfused", {
                try chain[0].evaluate(inputs: [input], outputs: [a], threadCount: threads)
                try chain[1].evaluate(inputs: [a], outputs: [b], threadCount: threads)
                try chain[2].evaluate(inputs: [b], outputs: [a], threadCount: threads)
            }),
            ("cpu \(label): 3 ops fused", { try fused.evaluate(inputs: [input], outputs: [a], threadCount: threads) }),
        ]
        for (name, body) in variants {
            if let stats = TimingStats(samples: try Timing.measure(warmup: warmup, runs: runs, body)) {
                rows.append(BenchRow(name: name, threads: threads, stats: stats, elements: input.count,
                                     bytes: 8 * input.count))
            }
        }
    }
    return rows
}

/// Times the GPU kernels (timestamps): one op, three dispatches through
/// intermediate images, one fused dispatch.
func gpuRows(label: String, chain: [ElementwiseLayer], fused: FusedLayer, input: Tensor, context: GPUContext,
             runs: Int, warmup: Int) throws -> [BenchRow] {
    let images = try (0..<3).map { _ in try context.makeSliceImage(like: input) }
    let source = try context.upload(input)
    var rows: [BenchRow] = []
    let variants: [(String, (GPUCommandBuffer) throws -> Void)] = [
        ("gpu \(label): \(chain[1].layerName) alone", { try chain[1].encode(commandBuffer: $0, inputs: [source], outputs: [images[0]]) }),
        ("gpu \(label): 3 ops unfused", { commands in
            try chain[0].encode(commandBuffer: commands, inputs: [source], outputs: [images[0]])
            try chain[1].encode(commandBuffer: commands, inputs: [images[0]], outputs: [images[1]])
            try chain[2].encode(commandBuffer: commands, inputs: [images[1]], outputs: [images[2]])
        }),
        ("gpu \(label): 3 ops fused", { try fused.encode(commandBuffer: $0, inputs: [source], outputs: [images[0]]) }),
    ]
    for (name, encode) in variants {
        var samples: [Double] = []
        for run in 0..<(warmup + runs) {
            let commands = try context.makeCommandBuffer()
            try commands.timestamp("before")
            try encode(commands)
            try commands.timestamp("after")
            try commands.commit()
            try commands.waitUntilCompleted()
            let stamps = try commands.timestamps()
            if run >= warmup, stamps.count == 2 { samples.append(stamps[1].nanoseconds / 1e6) }
        }
        if let stats = TimingStats(samples: samples) {
            rows.append(BenchRow(name: name, threads: 0, stats: stats, elements: input.count, bytes: 2 * source.fp16Bytes))
        }
    }
    return rows
}

do {
    var runs = 20, warmup = 3, shape = [1, 64, 256, 256]
    var words = Array(CommandLine.arguments.dropFirst())[...]
    while let flag = words.popFirst() {
        switch flag {
        case "--repeat": runs = try ValueParsing.count(words.popFirst() ?? "", option: flag, minimum: 1)
        case "--warmup": warmup = try ValueParsing.count(words.popFirst() ?? "", option: flag, minimum: 0)
        case "--shape": shape = try ValueParsing.shape(words.popFirst() ?? "")
        default: throw LayerKitError.invalidParameter("usage: FusionBench [--repeat N] [--warmup N] [--shape NxCxHxW]")
        }
    }
    let chains: [(String, [ElementwiseLayer])] = [
        ("A", [try op("Linear", ["scale": "2", "bias": "-0.5"]), try op("Relu"), try op("Clip", ["min": "0", "max": "6"])]),
        ("B", [try op("Linear", ["scale": "2", "bias": "-0.5"]), try op("Swish", ["beta": "0.5"]), try op("Tanh")]),
    ]
    let input = try Tensor.uniform(shape: shape, in: -4...4, seed: 1)
    let gpu = benchmarkGPUContext()
    var rows: [BenchRow] = []
    for (label, chain) in chains {
        let fused = try FusedLayer(chain)
        rows += try cpuRows(label: label, chain: chain, fused: fused, input: input, runs: runs, warmup: warmup)
        if let context = gpu.context {
            rows += try gpuRows(label: label, chain: chain, fused: fused, input: input, context: context,
                                runs: runs, warmup: warmup)
        }
    }
    print("A: Linear(scale 2, bias -0.5) -> Relu -> Clip(0, 6); B: Linear(scale 2, bias -0.5) -> Swish(beta 0.5) -> Tanh")
    print("on \(Tensor.describe(shape)) Float32; medians of \(runs) runs; CPU kernels \(CPUEvaluator.instructionSet)")
    print(gpu.note + "; GPU rows: kernels by timestamps, threads 0")
    printTable(rows, baselines: [])
} catch {
    FileHandle.standardError.write(Data("FusionBench: \(error)\n".utf8))
    exit(2)
}
