import BenchmarkSupport
import LayerKitCommands
import Foundation
import LayerKit

/// The per-channel value given to values that only come as weights
/// (PRelu's slope): PyTorch's initial PRelu slope, in every channel.
let weightValue: Float = 0.25

/// `definition` with its default parameters, and `weightValue` in every
/// channel for each value that has no scalar default.
func makeLayer(_ definition: OpDefinition, channels: Int) throws -> ElementwiseLayer {
    let layer = try ElementwiseLayer(definition: definition, parameters: [:])
    let blob = [Float](repeating: weightValue, count: channels).withUnsafeBytes { Data($0) }
    try layer.setWeightData(definition.values.filter(\.perChannel).map { $0.defaultValue == nil ? blob : Data() })
    return layer
}

/// The rows of one op on `input`: the CPU evaluator on 1 and 2 threads
/// (named by the op, with its input range), then the GPU kernel alone by timestamps (threads 0)
/// when there is a `context`. Also returns the worst disagreement between
/// the CPU and GPU results on the fp16-rounded input, |cpu - gpu| /
/// max(1, |cpu|) over elements where both are finite (nil without a GPU).
func opRows(_ layer: ElementwiseLayer, input: Tensor, context: GPUContext?,
            options: Options) throws -> (rows: [BenchRow], disagreement: Float?) {
    let name = layer.definition.name
    let output = try Tensor(shape: input.shape)
    var rows: [BenchRow] = []
    for threads in [1, 2] {
        let samples = try Timing.measure(warmup: options.warmup, runs: options.runs) {
            try layer.evaluate(inputs: [input], outputs: [output], threadCount: threads)
        }
        if let stats = TimingStats(samples: samples) {
            var row = BenchRow(name: name, threads: threads, stats: stats,
                               elements: input.count, bytes: 8 * input.count)
            row.inputRange = [layer.definition.inputRange.lowerBound, layer.definition.inputRange.upperBound]
            rows.append(row)
        }
    }
    guard let context else { return (rows, nil) }

    let image = try context.upload(input)
    let result = try context.makeSliceImage(like: input)
    let samples = try gpuKernelSamples(layer, context: context, input: image, output: result,
                                       warmup: options.warmup, runs: options.runs)
    if let stats = TimingStats(samples: samples) {
        rows.append(BenchRow(name: name, threads: 0, stats: stats,
                             elements: input.count, bytes: 2 * image.fp16Bytes))
    }
    // The GPU reads fp16: check against the CPU on the same rounded input,
    // so that a threshold op (x > 1) sees the same x on both sides.
    try layer.evaluate(inputs: [try input.roundedToHalf()], outputs: [output], threadCount: 2)
    let gpuOutput = try Tensor(shape: input.shape)
    let commands = try context.makeCommandBuffer()
    try commands.download(result, into: gpuOutput)
    try commands.commit()
    try commands.waitUntilCompleted()
    var worst: Float = 0
    for (c, g) in zip(output.elements, gpuOutput.elements) where c.isFinite && g.isFinite {
        worst = max(worst, abs(c - g) / max(1, abs(c)))
    }
    return (rows, worst)
}
