import CKernels

/// ONNX Softmax, LogSoftmax and Hardmax: along one axis (opset 13 and
/// later), `exp(x - max) / sum(exp(x - max))`, its logarithm
/// `(x - max) - log(sum(exp(x - max)))`, or 1 at the first largest value
/// and 0 elsewhere. The maximum is subtracted first, so exp never overflows.
///
/// Before opset 13 these ops coerced the input to 2-D at `axis`: the op
/// runs over all the axes from `axis` on, flattened (`flattensTrailingAxes`).
///
/// Any rank on the CPU. On the GPU along one axis of the slice image: axis
/// 1, the channels (a rank-2 [N, M] tensor is an N×M×1×1 image), 2 (H) or 3
/// (W): attention's scores [B, heads, S, S] along the last axis.
public final class Softmax: Layer, ShapeLimitedGPULayer, Sendable {
    /// What the layer computes along its axis.
    public enum Kind: Sendable, Equatable {
        /// ONNX Softmax.
        case softmax
        /// ONNX LogSoftmax.
        case logSoftmax
        /// ONNX Hardmax.
        case hardmax
    }

    /// The axis the op runs along (non-negative).
    public let axis: Int
    /// Softmax, LogSoftmax or Hardmax.
    public let kind: Kind
    /// Whether the op runs over every axis from `axis` on, flattened (ONNX
    /// before opset 13), rather than along `axis` alone.
    public let flattensTrailingAxes: Bool
    /// The pipeline `prepare` made on each context.
    private let gpuKernel = PerContext<GPUKernel<ShapeConstants>>()

    /// `kind` along `axis`, counted from 0 (a converter resolves negative
    /// ONNX axes first), or over the axes from `axis` on when
    /// `flattensTrailingAxes`; throws for a negative axis.
    public init(axis: Int, kind: Kind = .softmax, flattensTrailingAxes: Bool = false) throws {
        self.kind = kind
        self.flattensTrailingAxes = flattensTrailingAxes
        self.axis = try LayerChecks.nonNegativeAxis(axis, layer: Softmax.name(of: kind))
    }

    public var layerName: String { Softmax.name(of: kind) }

    private static func name(of kind: Kind) -> String {
        switch kind {
        case .softmax: "Softmax"
        case .logSoftmax: "LogSoftmax"
        case .hardmax: "Hardmax"
        }
    }

    /// The input's shape; throws unless `axis` is one of its axes.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        try LayerChecks.requireAxis(axis, of: shape, layer: layerName)
        return [shape]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        let outer = LayerChecks.product(shape[..<axis])
        // Coerced to 2-D: [outer, everything from axis on] with inner 1.
        let length = flattensTrailingAxes ? LayerChecks.product(shape[axis...]) : shape[axis]
        let inner = flattensTrailingAxes ? 1 : LayerChecks.product(shape[(axis + 1)...])
        let block = length * inner
        guard block > 0 else { return }
        let (input, output) = (inputs[0], outputs[0])
        let cKind = switch kind {
        case .softmax: LK_SOFTMAX
        case .logSoftmax: LK_LOG_SOFTMAX
        case .hardmax: LK_HARDMAX
        }
        forEachChunk(count: outer, chunkSize: max(1, defaultChunkSize / block), threadCount: CPUThreads.current) { range in
            let scratch = UnsafeMutablePointer<Float>.allocate(capacity: 2 * inner)
            defer { scratch.deallocate() }
            lk_softmax_f32(input.dataPointer + range.lowerBound * block, output.dataPointer + range.lowerBound * block,
                           range.count, length, inner, scratch, cKind)
        }
    }

    /// Along one axis of rank 4 at most (the policy checks the rank).
    public var hasGPUImplementation: Bool { true }

    /// Nil along one axis of the image but the batch axis; ONNX's flattening
    /// before opset 13 is one axis when `axis` is the last.
    public func whyNotGPU(inputShapes: [[Int]], outputShapes: [[Int]]) -> String? {
        let rank = inputShapes.first?.count ?? 0
        if flattensTrailingAxes && axis < rank - 1 {
            return "it runs over axes \(axis) to \(rank - 1) flattened (ONNX before opset 13), not one axis of the image"
        }
        return axis == 0 ? "it runs along axis 0, the batch axis, which the GPU form does not walk" : nil
    }

    /// Creates the pipeline on `context`, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try kernel(on: context) }

    private func kernel(on context: GPUContext) throws -> GPUKernel<ShapeConstants> {
        let define = switch kind {
        case .softmax: "0"
        case .logSoftmax: "1"
        case .hardmax: "2"
        }
        // Axis 1 walks the slices, 2 the height (LK_SOFTMAX_ALONG 2), 3 the width (1).
        let along = [1: "0", 2: "2", 3: "1"][axis] ?? "0"
        return try gpuKernel.value(on: context) {
            try BuiltInShaders.softmax.kernel(on: context, defines: [("LK_SOFTMAX_KIND", define), ("LK_SOFTMAX_ALONG", along)])
        }
    }

    /// `Shaders/softmax.comp`: one invocation per (x, y, item) walks the
    /// slices twice (maximum, then sum of exponentials) and writes them all.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1, inputs[0].shape == outputs[0].shape else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image and 1 output image of the same shape")
        }
        if let reason = whyNotGPU(inputShapes: [inputs[0].shape], outputShapes: [outputs[0].shape]) {
            throw LayerKitError.unsupported("\(layerName) cannot run on the GPU: \(reason)")
        }
        let output = outputs[0]
        // Along the channels one invocation per texel of an item; along H or W one per line of an array layer.
        let threads = switch axis {
        case 1: (output.width, output.height, output.batch)
        case 2: (output.width, 1, output.layers)
        default: (output.height, 1, output.layers)
        }
        try commandBuffer.dispatch(kernel(on: commandBuffer.context), images: [inputs[0], output],
                                   constants: output.shapeConstants, threads: threads)
    }
}
