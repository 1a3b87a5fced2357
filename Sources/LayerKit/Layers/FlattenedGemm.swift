import Foundation

/// A Gemm reading the flattened `[N, C·H·W]` form of an `[N, C, H, W]` map,
/// as AlexNet- and VGG-style classifiers end (Flatten or Reshape, then the
/// first fully connected layer). The flattened vector has C·H·W channels,
/// 9,216 to 25,088 there: more slices than a GPU's image-array layers hold.
/// The product reads the map itself instead, as one convolution whose
/// kernel covers the whole map (Caffe's InnerProduct on a blob): the weights
/// are the Gemm's, laid out `[M, C, H, W]`. On the CPU it is the Gemm on the
/// same row-major elements, bit for bit.
final class FlattenedGemm: Layer {
    /// The Gemm the node is.
    let gemm: Gemm
    /// The map's channels and extents.
    let map: (channels: Int, height: Int, width: Int)
    /// The GPU form (`convolution()`), made on first use.
    private let gpuForm = KeyedLayerCache<Convolution>()

    var layerName: String { gemm.layerName }

    /// The product of `gemm` over maps of `channels x height x width`;
    /// nil when the Gemm has no GPU form (transA, a per-row C) or its
    /// K is not the map's size.
    init?(gemm: Gemm, channels: Int, height: Int, width: Int) {
        guard gemm.hasGPUImplementation, channels * height * width == gemm.inputFeatures else { return nil }
        (self.gemm, self.map) = (gemm, (channels, height, width))
    }

    /// The whole-map convolution the product runs as on the GPU, made on
    /// the first GPU use (a run on the CPU alone never holds its weights).
    func convolution() throws -> Convolution {
        // B' rows are the flattened map's elements in order: a kernel over the whole map.
        try gpuForm.layer(for: []) { try gemm.convolution(kernel: [map.channels, map.height, map.width]) }
    }

    /// `[N, M]` for an `[N, C, H, W]` map.
    func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        guard shape.count == 4, Array(shape[1...]) == [map.channels, map.height, map.width] else {
            throw LayerKitError.shapeMismatch("\(layerName): input \(Tensor.describe(shape)) is not an N x "
                                              + "\(map.channels)x\(map.height)x\(map.width) map")
        }
        return [[shape[0], gemm.outputFeatures]]
    }

    /// The Gemm on the map's elements read as `[N, C·H·W]`.
    func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        try evaluate(inputs: inputs, outputs: outputs, epilogue: nil, residual: nil)
    }

    /// With a fused epilogue (see `Gemm.evaluate(inputs:outputs:epilogue:residual:)`).
    func evaluate(inputs: [Tensor], outputs: [Tensor], epilogue: Epilogue?, residual: Tensor?) throws {
        _ = try outputShapes(forInputShapes: inputs.map(\.shape))
        // The same floats read as a matrix: a view, not a copy per run.
        let flat = try Tensor(viewing: inputs[0].dataPointer, shape: [inputs[0].shape[0], gemm.inputFeatures],
                              owner: inputs[0])
        try gemm.evaluate(inputs: [flat], outputs: outputs, epilogue: epilogue, residual: residual)
    }

    var hasGPUImplementation: Bool { true }

    func prepare(on context: GPUContext, inputShapes: [[Int]]) throws {
        try convolution().prepare(on: context, inputShapes: inputShapes)
    }

    /// The whole-map convolution: the `N×M×1×1` output image is the `[N, M]` result.
    func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        try convolution().encode(commandBuffer: commandBuffer, inputs: inputs, outputs: outputs)
    }
}
