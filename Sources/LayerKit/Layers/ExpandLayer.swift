import Foundation

/// ONNX Expand: the input broadcast against a constant shape, both ways
/// (numpy's rule: ranks aligned at the last axis, an extent of 1 stretches
/// to the other's; so a 1 in `shape` keeps the input's extent). Any rank on
/// the CPU; on the GPU for output ranks 1 to 4, by `Shaders/window.comp`.
public final class ExpandLayer: WindowLayer, Sendable {
    /// The shape broadcast against.
    public let shape: [Int]
    /// The rank of the input this layer was made for: the GPU sees images
    /// padded to rank 4 and needs it to align the input's axes.
    public let inputRank: Int

    /// An expand of an input of rank `inputRank` against `shape` (no
    /// negative extents).
    public init(shape: [Int], inputRank: Int) throws {
        guard shape.allSatisfy({ $0 >= 0 }), inputRank >= 0 else {
            throw LayerKitError.invalidParameter("Expand: shape \(shape) must have extents >= 0")
        }
        (self.shape, self.inputRank) = (shape, inputRank)
    }

    public var layerName: String { "Expand" }

    /// The window that broadcasts an input of `input`'s shape.
    func window(for input: [Int]) throws -> ElementWindow {
        guard input.count == inputRank else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): input \(Tensor.describe(input)) is not of rank \(inputRank), the rank it was made for")
        }
        let rank = max(input.count, shape.count)
        let a = Array(repeating: 1, count: rank - input.count) + input
        let b = Array(repeating: 1, count: rank - shape.count) + shape
        let output = try zip(a, b).map { x, y in
            guard x == y || x == 1 || y == 1 else {
                throw LayerKitError.shapeMismatch(
                    "\(layerName): input \(Tensor.describe(input)) does not broadcast to shape \(shape)")
            }
            return x == 1 ? y : x
        }
        _ = try Tensor.elementCount(of: output)
        return ElementWindow(inputShape: a, outputShape: output)
    }

    public var hasGPUImplementation: Bool { max(inputRank, shape.count) <= 4 }

    /// `Shaders/window.comp`; the input's tensor shape is its image's first `inputRank` extents.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1, inputRank >= 1 else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image of rank 1 to 4 and 1 output image")
        }
        let window = try window(for: Array(inputs[0].shape.prefix(inputRank)))
        let pad = 4 - window.outputShape.count
        let padded = ElementWindow(inputShape: window.inputShape + Array(repeating: 1, count: pad),
                                   outputShape: window.outputShape + Array(repeating: 1, count: pad))
        try padded.encode(ElementWindow.kernel(on: commandBuffer.context), commandBuffer: commandBuffer,
                          input: inputs[0], output: outputs[0], layer: layerName)
    }
}
