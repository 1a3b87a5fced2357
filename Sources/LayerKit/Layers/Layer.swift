import Foundation

/// What LayerKit needs to run a layer: shapes, a CPU implementation, and
/// optionally a GPU one. A model's standard ops (Conv, Gemm, pools...) are
/// `Layer`s made from their ONNX nodes; user layers are `CustomLayer`s.
///
/// The backend runs `encode` when the layer has one and the GPU is in use,
/// else `evaluate`, and says so when it falls back.
public protocol Layer: AnyObject {
    /// The name this layer goes by in notices and reports (its op).
    var layerName: String { get }

    /// The output shapes for the given input shapes; throws if they do not fit.
    func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]]

    /// Computes `outputs` from `inputs` on the CPU. Outputs are allocated by
    /// the caller with the shapes `outputShapes` returned.
    func evaluate(inputs: [Tensor], outputs: [Tensor]) throws

    /// Whether `encode` is implemented. Defaults to false.
    var hasGPUImplementation: Bool { get }

    /// Gets the layer ready to encode inputs of `inputShapes` on `context`,
    /// as ncnn's `create_pipeline` and ExecuTorch's `prepare_pipelines` do:
    /// create its pipelines, upload its constants, size its scratch. The
    /// plan calls it once per set of input shapes, before the first `encode`
    /// and never during a run. Defaults to nothing.
    func prepare(on context: GPUContext, inputShapes: [[Int]]) throws

    /// Encodes the layer's GPU work. Images are allocated by the caller, in
    /// the shapes `Tensor.nchwShape(_:)` gives for the tensor shapes (a
    /// rank-2 [N, K] tensor is an N×K×1×1 image).
    func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws
}

extension Layer {
    public var hasGPUImplementation: Bool { false }

    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws {}

    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        throw LayerKitError.unsupported("\(layerName) has no GPU implementation")
    }
}
