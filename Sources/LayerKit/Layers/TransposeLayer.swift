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

    /// Walks the output in row-major order with an odometer over the outer
    /// axes. When the output's last axis is the input's last (a head split,
    /// `[B, S, H, D]` to `[B, H, S, D]`) each output row is one contiguous
    /// copy. Otherwise the output's last axis and the axis that is the
    /// input's last go in 16 x 16 tiles, so a tile's strided reads share their
    /// cache lines (NCHW to NHWC and back; element by element, a row of
    /// ConvNeXt's 96 channels read 96 lines 12 KB apart).
    func moveElements<Element>(inputs: [UnsafeBufferPointer<Element>], inputShapes: [[Int]],
                               outputs: [UnsafeMutableBufferPointer<Element>]) throws {
        let shape = try outputShapes(forInputShapes: inputShapes)[0]
        let input = inputShapes[0]
        guard let source = inputs.first, let destination = outputs.first,
              source.count == LayerChecks.product(input[...]), destination.count == source.count else {
            throw LayerKitError.shapeMismatch("\(layerName): buffers do not match \(Tensor.describe(input))")
        }
        guard let src = source.baseAddress, let dst = destination.baseAddress, !destination.isEmpty else { return }
        guard !shape.isEmpty else { dst[0] = src[0]; return }
        let inputStrides = LayerChecks.rowMajorStrides(input)
        let strides = perm.map { inputStrides[$0] }  // per output axis
        let outputStrides = LayerChecks.rowMajorStrides(shape)
        let last = shape.count - 1
        // The output axis that is the input's last (stride 1), when it is another than the output's last.
        let tiled = perm.firstIndex(of: input.count - 1).flatMap { j in
            j != last && input[input.count - 1] > 1 && shape[last] > 1 ? j : nil
        }
        let walked = (0..<shape.count).filter { $0 != last && $0 != tiled }
        let tile = 16
        var index = Array(repeating: 0, count: shape.count)
        var (inOffset, outOffset) = (0, 0)
        while true {
            if let j = tiled {
                let (rows, columns, rowStride, columnStride) = (shape[j], shape[last], outputStrides[j], strides[last])
                for r0 in stride(from: 0, to: rows, by: tile) {
                    for c0 in stride(from: 0, to: columns, by: tile) {
                        for r in r0..<min(r0 + tile, rows) {
                            let (to, from) = (dst + outOffset + r * rowStride, src + inOffset + r)
                            for c in c0..<min(c0 + tile, columns) { to[c] = from[c * columnStride] }
                        }
                    }
                }
            } else if strides[last] == 1 {
                (dst + outOffset).update(from: src + inOffset, count: shape[last])
            } else {
                for c in 0..<shape[last] { dst[outOffset + c] = src[inOffset + c * strides[last]] }
            }
            // Advance the odometer over the walked axes, innermost first.
            var k = walked.count - 1
            while k >= 0 {
                let axis = walked[k]
                index[axis] += 1
                inOffset += strides[axis]
                outOffset += outputStrides[axis]
                if index[axis] < shape[axis] { break }
                inOffset -= strides[axis] * shape[axis]
                outOffset -= outputStrides[axis] * shape[axis]
                index[axis] = 0
                k -= 1
            }
            if k < 0 { return }
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
