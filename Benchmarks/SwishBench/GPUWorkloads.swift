import BenchmarkSupport
import LayerKitCommands
import Foundation
import LayerKit

/// Measures the GPU path of Swish on `input`: upload (Float32 → staging →
/// fp16 slice image), the kernel alone (GPU timestamps), download (slice
/// image → Float32), and the whole trip through `Backend`. Returns no rows,
/// with a note, when there is no usable Vulkan device.
func gpuSwishRows(options: Options, input: Tensor) throws -> (rows: [BenchRow], note: String) {
    let (found, note) = benchmarkGPUContext()
    guard let context = found else { return ([], note) }
    let layer = try Swish(beta: 1)
    let image = try context.upload(input)
    let result = try context.makeSliceImage(like: input)
    let output = try Tensor(shape: input.shape)
    var rows: [BenchRow] = []
    func add(_ name: String, _ samples: [Double], bytes: Int) {
        if let stats = TimingStats(samples: samples) {
            rows.append(BenchRow(name: name, threads: 0, stats: stats, elements: input.count, bytes: bytes))
        }
    }
    let imageBytes = image.fp16Bytes

    add("gpu upload", try Timing.measure(warmup: options.warmup, runs: options.runs) {
        _ = try context.upload(input)
    }, bytes: 4 * input.count + imageBytes)

    let kernelSamples = try gpuKernelSamples(layer, context: context, input: image, output: result,
                                             warmup: options.warmup, runs: options.runs)
    add("gpu kernel (timestamps)", kernelSamples, bytes: 2 * imageBytes)

    add("gpu download", try Timing.measure(warmup: options.warmup, runs: options.runs) {
        let commands = try context.makeCommandBuffer()
        try commands.download(result, into: output)
        try commands.commit()
        try commands.waitUntilCompleted()
    }, bytes: imageBytes + 4 * input.count)

    let backend = try Backend(computeUnits: .gpu, context: context)
    add("gpu end to end", try Timing.measure(warmup: options.warmup, runs: options.runs) {
        _ = try backend.run(layer, inputs: [input])
    }, bytes: 8 * input.count)
    return (rows, note)
}
