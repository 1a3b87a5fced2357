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
        var strides = [Int](repeating: 1, count: shape.count)
        for axis in shape.indices.reversed().dropFirst() { strides[axis] = strides[axis + 1] * shape[axis + 1] }
        let kept = shape.indices.filter { !axes.contains($0) }
        // The offset of every element of one reduction, from the first.
        var offsets = [0]
        for axis in axes {
            offsets = offsets.flatMap { base in (0..<shape[axis]).map { base + $0 * strides[axis] } }
        }
        if shape.contains(0) { offsets = [] }
        let keptExtents = kept.map { shape[$0] }, keptStrides = kept.map { strides[$0] }
        let count = output.count
        let operation = operation
        let reductionOffsets = offsets
        forEachChunk(count: count, chunkSize: max(1, defaultChunkSize / max(1, offsets.count)),
                     threadCount: CPUThreads.current) { range in
            for o in range {
                var rest = o, base = 0
                for k in keptExtents.indices.reversed() {
                    base += (rest % keptExtents[k]) * keptStrides[k]
                    rest /= keptExtents[k]
                }
                output.dataPointer[o] = Reduce.reduce(operation, input.dataPointer + base, reductionOffsets)
            }
        }
    }

    /// `operation` over `x[offsets]`, in double precision.
    private static func reduce(_ operation: Operation, _ x: UnsafeMutablePointer<Float>, _ offsets: [Int]) -> Float {
        switch operation {
        case .max, .min:
            var result = operation == .max ? -Double.infinity : Double.infinity
            for offset in offsets {
                let v = Double(x[offset])
                if v.isNaN { return .nan }
                result = operation == .max ? Swift.max(result, v) : Swift.min(result, v)
            }
            return Float(result)
        case .product:
            var result = 1.0
            for offset in offsets { result *= Double(x[offset]) }
            return Float(result)
        case .logSumExp:
            var m = -Double.infinity
            for offset in offsets { m = Swift.max(m, Double(x[offset])) }
            let shift = m.isFinite ? m : 0
            var sum = 0.0
            for offset in offsets { sum += Foundation.exp(Double(x[offset]) - shift) }
            return Float(Foundation.log(sum) + shift)
        case .sum, .mean, .l1, .l2, .sumSquare, .logSum:
            var sum = 0.0
            switch operation {
            case .l1: for offset in offsets { sum += Swift.abs(Double(x[offset])) }
            case .l2, .sumSquare: for offset in offsets { let v = Double(x[offset]); sum += v * v }
            default: for offset in offsets { sum += Double(x[offset]) }
            }
            switch operation {
            case .mean: return Float(sum / Double(offsets.count))
            case .l2: return Float(sum.squareRoot())
            case .logSum: return Float(Foundation.log(sum))
            default: return Float(sum)
            }
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
