import Foundation

/// The ONNX Reduce ops (ReduceSum, ReduceMean, ReduceMax, ReduceMin,
/// ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum,
/// ReduceLogSumExp) over a set of axes, keeping each reduced axis as
/// extent 1 or dropping it (`keepDims`).
///
/// Any rank on the CPU, accumulated in double precision. On the GPU two
/// forms, both pure arithmetic on the slice image: every axis after the
/// channel axis of a rank-3 or rank-4 input (a global pool: the dynamo
/// exporter's ReduceMean over axes [2, 3]; with or without keepDims the
/// result is an N×C×1×1 image), and the channel axis alone when the output
/// keeps the image's layout (keepDims, or a rank-2 input).
public final class Reduce: Layer, Sendable {
    /// What a Reduce op computes over its axes.
    public enum Operation: String, Sendable, CaseIterable {
        case sum = "ReduceSum"
        case mean = "ReduceMean"
        case max = "ReduceMax"
        case min = "ReduceMin"
        case product = "ReduceProd"
        case l1 = "ReduceL1"
        case l2 = "ReduceL2"
        case sumSquare = "ReduceSumSquare"
        case logSum = "ReduceLogSum"
        case logSumExp = "ReduceLogSumExp"

        /// Its code in `Shaders/reduce.comp` (LK_REDUCE_OP).
        var shaderCode: Int { Operation.allCases.firstIndex(of: self) ?? 0 }

        /// Whether reducing one element gives it back: not so for |x|, x², log x
        /// and log(exp x) (which is inf past exp's range in Float32, as onnxruntime).
        var isIdentityOnOneElement: Bool { [.sum, .mean, .max, .min, .product].contains(self) }
    }

    /// Which of the GPU's reductions a layer is.
    enum GPUForm: Sendable { case spatial, channels }

    /// The operation.
    public let operation: Operation
    /// The reduced axes, non-negative, sorted, each once.
    public let axes: [Int]
    /// Whether reduced axes stay as extent 1.
    public let keepDims: Bool
    /// The rank of the input the axes were resolved against.
    public let rank: Int
    let gpuForm: GPUForm?
    /// The pipeline `prepare` made on each context.
    private let gpuKernel = PerContext<GPUKernel<ReduceConstants>>()

    /// `operation` over `axes` (non-negative, each below `rank`; a converter
    /// resolves negative ONNX axes first) of inputs of rank `rank`. An empty
    /// `axes` reduces nothing: each element is reduced on its own (ONNX's
    /// `noop_with_empty_axes` is the converter's, which passes every axis or
    /// none). Throws for an axis out of range or listed twice.
    public init(_ operation: Operation, axes: [Int], keepDims: Bool, rank: Int) throws {
        guard rank >= 0 else { throw LayerKitError.invalidParameter("\(operation.rawValue): rank \(rank) must be >= 0") }
        for axis in axes where !(0..<rank).contains(axis) {
            throw LayerKitError.invalidParameter(
                "\(operation.rawValue): axis \(axis) is not an axis of a rank-\(rank) input (0..<\(rank))")
        }
        guard Set(axes).count == axes.count else {
            throw LayerKitError.invalidParameter("\(operation.rawValue): axes \(axes) list an axis twice")
        }
        self.operation = operation
        self.axes = axes.sorted()
        self.keepDims = keepDims
        self.rank = rank
        let sorted = axes.sorted()
        if (3...4).contains(rank), sorted == Array(2..<rank) {
            gpuForm = .spatial
        } else if (2...4).contains(rank), sorted == [1], keepDims || rank == 2 {
            gpuForm = .channels
        } else {
            gpuForm = nil
        }
    }

    public var layerName: String { operation.rawValue }

    /// The input's shape with each reduced axis 1 (`keepDims`) or gone.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        try LayerChecks.requireRank(shape, in: rank...rank, layer: layerName)
        var output: [Int] = []
        for (axis, extent) in shape.enumerated() {
            if !axes.contains(axis) { output.append(extent) } else if keepDims { output.append(1) }
        }
        return [output]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let outputShape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, outputShape, layer: layerName)
        let (input, output) = (inputs[0], outputs[0])
        let shape = input.shape
        guard output.count > 0 else { return }
        // Runs of adjacent axes that are all reduced or all kept merge into
        // one (extent-1 axes drop out), so a global pool is one contiguous
        // run per output and no offset table outgrows the input.
        var groups: [(extent: Int, stride: Int, reduced: Bool)] = []
        var stride = 1
        for axis in shape.indices.reversed() {
            defer { stride *= shape[axis] }
            guard shape[axis] != 1 else { continue }
            let reduced = axes.contains(axis)
            if let last = groups.last, last.reduced == reduced {
                groups[groups.count - 1].extent *= shape[axis]
            } else {
                groups.append((shape[axis], stride, reduced))
            }
        }
        groups.reverse()
        let reducedGroups = groups.filter(\.reduced), keptGroups = groups.filter { !$0.reduced }
        let inner = reducedGroups.last ?? (extent: 1, stride: 1, reduced: true)
        // The offset of each run of the innermost reduced group, from the first.
        var offsets = [0]
        for group in reducedGroups.dropLast() {
            offsets = offsets.flatMap { base in (0..<group.extent).map { base + $0 * group.stride } }
        }
        let operation = operation
        let runs = offsets, run = (inner.extent, inner.stride)
        let perOutput = max(1, offsets.count * inner.extent)
        forEachChunk(count: output.count, chunkSize: max(1, defaultChunkSize / perOutput),
                     threadCount: CPUThreads.current) { range in
            for o in range {
                var rest = o, base = 0
                for group in keptGroups.reversed() {
                    base += (rest % group.extent) * group.stride
                    rest /= group.extent
                }
                output.dataPointer[o] = Reduce.reduce(operation, input.dataPointer + base, runs, run)
            }
        }
    }

    /// `operation` over the elements `x[offset + i * run.stride]` (each
    /// offset, i < run.extent), in double precision.
    private static func reduce(_ operation: Operation, _ x: UnsafeMutablePointer<Float>, _ offsets: [Int],
                               _ run: (extent: Int, stride: Int)) -> Float {
        @inline(__always) func visit(_ body: (Double) -> Void) {
            for offset in offsets {
                for i in 0..<run.extent { body(Double(x[offset + i * run.stride])) }
            }
        }
        let count = Double(offsets.count * run.extent)
        switch operation {
        case .max:
            var result = -Double.infinity
            visit { result = $0.isNaN || result.isNaN ? .nan : Swift.max(result, $0) }
            return Float(result)
        case .min:
            var result = Double.infinity
            visit { result = $0.isNaN || result.isNaN ? .nan : Swift.min(result, $0) }
            return Float(result)
        case .product:
            var result = 1.0
            visit { result *= $0 }
            return Float(result)
        case .logSumExp:
            var m = -Double.infinity
            visit { m = Swift.max(m, $0) }
            let shift = m.isFinite ? m : 0
            var sum = 0.0
            visit { sum += Foundation.exp($0 - shift) }
            return Float(Foundation.log(sum) + shift)
        case .l1:
            var sum = 0.0
            visit { sum += Swift.abs($0) }
            return Float(sum)
        case .l2, .sumSquare:
            var sum = 0.0
            visit { sum += $0 * $0 }
            return Float(operation == .l2 ? sum.squareRoot() : sum)
        case .sum, .mean, .logSum:
            var sum = 0.0
            visit { sum += $0 }
            return Float(operation == .mean ? sum / count : operation == .logSum ? Foundation.log(sum) : sum)
        }
    }

    /// True for the GPU's two forms: every axis after the channel axis of a
    /// rank-3 or rank-4 input, or the channel axis alone (kept, or of a
    /// rank-2 input).
    public var hasGPUImplementation: Bool { gpuForm != nil }

    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try kernel(on: context) }

    private func kernel(on context: GPUContext) throws -> GPUKernel<ReduceConstants> {
        try gpuKernel.value(on: context) {
            try BuiltInShaders.reduce.kernel(on: context, defines: [
                ("LK_REDUCE_OP", "\(operation.shaderCode)"), ("LK_REDUCE_SPATIAL", gpuForm == .spatial ? "1" : "0"),
            ])
        }
    }

    /// `Shaders/reduce.comp`: a spatial reduction is one workgroup per
    /// output texel (an item's slice), its invocations striding over the
    /// plane and combining in shared memory; a channel reduction is one
    /// invocation per output texel walking the item's slices.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard let gpuForm else {
            throw LayerKitError.unsupported(
                "\(layerName) over axes \(axes) of a rank-\(rank) input (keepdims \(keepDims ? 1 : 0)) has no GPU form")
        }
        guard inputs.count == 1, outputs.count == 1 else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image and 1 output image")
        }
        let (input, output) = (inputs[0], outputs[0])
        let expected = gpuForm == .spatial ? [input.batch, input.featureChannels, 1, 1]
            : [input.batch, 1, input.height, input.width]
        guard Array(output.shape) == expected else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): output image \(Tensor.describe(output.shape)) does not fit input \(Tensor.describe(input.shape))")
        }
        let constants = ReduceConstants(shape: output.shapeConstants, inputWidth: UInt32(input.width),
                                        inputHeight: UInt32(input.height), inputChannels: UInt32(input.featureChannels),
                                        inputSlices: UInt32(input.slices))
        // Spatial: one 8x8 workgroup per output layer.
        let threads = gpuForm == .spatial ? (8, 8, output.batch * output.slices) : output.threads
        try commandBuffer.dispatch(kernel(on: commandBuffer.context), images: [input, output], constants: constants,
                                   threads: threads)
    }
}
