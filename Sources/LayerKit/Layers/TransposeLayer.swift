import Foundation

/// ONNX Transpose: output axis `k` is input axis `perm[k]`. Any rank on the
/// CPU (and in load-time folding, on Int64); on the GPU up to rank 4, the
/// tensors read as NCHW by `Tensor.nchwShape` (the padded trailing axes of
/// a lower rank stay where they are).
public final class TransposeLayer: ElementMovingLayer, Sendable {
    /// The permutation: output axis `k` is input axis `perm[k]`.
    public let perm: [Int]
    /// The pipeline `prepare` made on each context.
    private let gpuKernel = PerContext<GPUKernel<TransposeConstants>>()

    /// A transpose by `perm`, which must be a permutation of `0..<perm.count`.
    public init(perm: [Int]) throws {
        guard Set(perm) == Set(0..<perm.count), perm.count == Set(perm).count else {
            throw LayerKitError.invalidParameter("Transpose: perm \(perm) is not a permutation of 0..<\(perm.count)")
        }
        self.perm = perm
    }

    public var layerName: String { "Transpose" }

    /// The input's extents in the order of `perm`; throws unless the rank is `perm.count`.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        guard shape.count == perm.count else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): perm \(perm) has \(perm.count) axes; the input \(Tensor.describe(shape)) has \(shape.count)")
        }
        return [perm.map { shape[$0] }]
    }

    /// Walks the output in row-major order with an odometer over the
    /// input's offset, so the innermost step is one stride add.
    func moveElements<Element>(inputs: [UnsafeBufferPointer<Element>], inputShapes: [[Int]],
                               outputs: [UnsafeMutableBufferPointer<Element>]) throws {
        let shape = try outputShapes(forInputShapes: inputShapes)[0]
        let input = inputShapes[0]
        guard let source = inputs.first, let destination = outputs.first,
              source.count == LayerChecks.product(input[...]), destination.count == source.count else {
            throw LayerKitError.shapeMismatch("\(layerName): buffers do not match \(Tensor.describe(input))")
        }
        guard !destination.isEmpty else { return }
        guard !shape.isEmpty else { destination[0] = source[0]; return }
        var inputStrides = Array(repeating: 1, count: input.count)
        for axis in stride(from: input.count - 2, through: 0, by: -1) {
            inputStrides[axis] = inputStrides[axis + 1] * input[axis + 1]
        }
        let strides = perm.map { inputStrides[$0] }  // per output axis
        let last = shape.count - 1
        let (inner, innerStride) = (shape[last], strides[last])
        var index = Array(repeating: 0, count: shape.count)
        var offset = 0, written = 0
        while written < destination.count {
            for i in 0..<inner { destination[written + i] = source[offset + i * innerStride] }
            written += inner
            // Advance the odometer over the outer axes.
            var axis = last - 1
            while axis >= 0 {
                index[axis] += 1
                offset += strides[axis]
                if index[axis] < shape[axis] { break }
                offset -= strides[axis] * shape[axis]
                index[axis] = 0
                axis -= 1
            }
        }
    }

    /// Up to rank 4: a slice image holds no more (the placement policy
    /// runs higher ranks on the CPU and says so).
    public var hasGPUImplementation: Bool { true }

    /// Creates the pipeline on `context`, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try kernel(on: context) }

    private func kernel(on context: GPUContext) throws -> GPUKernel<TransposeConstants> {
        try gpuKernel.value(on: context) { try BuiltInShaders.transpose.kernel(on: context) }
    }

    /// `Shaders/transpose.comp`: each output lane computes its input
    /// element through the permutation (extended to 4 axes by the identity)
    /// and loads it.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard perm.count <= 4, inputs.count == 1, outputs.count == 1 else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image and 1 output image, rank 4 at most")
        }
        let (input, output) = (inputs[0], outputs[0])
        let perm4 = perm + Array(perm.count..<4)
        let inShape = input.shape
        guard perm4.map({ inShape[$0] }) == output.shape else {
            throw LayerKitError.shapeMismatch("\(layerName): output image \(Tensor.describe(output.shape)) is not the "
                                              + "transpose of \(Tensor.describe(inShape)) by \(perm)")
        }
        let constants = TransposeConstants(shape: output.shapeConstants, inputWidth: UInt32(input.width),
                                           inputHeight: UInt32(input.height), inputChannels: UInt32(input.featureChannels),
                                           perm: SIMD4(perm4.map { UInt32($0) }))
        try commandBuffer.dispatch(kernel(on: commandBuffer.context), images: [input, output], constants: constants,
                                   threads: output.threads)
    }
}
