import Foundation

/// ONNX Tile: the input repeated along each axis a constant number of
/// times. Any rank on the CPU; on the GPU for ranks 1 to 4, by
/// `Shaders/window.comp`.
public final class TileLayer: WindowLayer, Sendable {
    /// How many times each axis repeats (one per input axis, none negative).
    public let repeats: [Int]

    /// A tile by `repeats`; throws for a negative repeat.
    public init(repeats: [Int]) throws {
        guard repeats.allSatisfy({ $0 >= 0 }) else {
            throw LayerKitError.invalidParameter("Tile: repeats \(repeats) must be >= 0")
        }
        self.repeats = repeats
    }

    public var layerName: String { "Tile" }

    /// The window that tiles an input of `shape`; the products are checked.
    func window(for shape: [Int]) throws -> ElementWindow {
        guard shape.count == repeats.count else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): \(repeats.count) repeats for input \(Tensor.describe(shape)) of rank \(shape.count)")
        }
        let output = try zip(shape, repeats).map { extent, count in
            let (product, overflow) = extent.multipliedReportingOverflow(by: count)
            guard !overflow else {
                throw LayerKitError.shapeMismatch("\(layerName): input \(Tensor.describe(shape)) tiled \(repeats) overflows")
            }
            return product
        }
        _ = try Tensor.elementCount(of: output)
        return ElementWindow(inputShape: shape, outputShape: output)
    }

    public var hasGPUImplementation: Bool { repeats.count <= 4 }

    /// `Shaders/window.comp`; trailing padded axes repeat once.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1, repeats.count <= 4 else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image of rank 1 to 4 and 1 output image")
        }
        let padded = try TileLayer(repeats: repeats + Array(repeating: 1, count: 4 - repeats.count))
        try padded.window(for: inputs[0].shape).encode(ElementWindow.kernel(on: commandBuffer.context),
                                                       commandBuffer: commandBuffer, input: inputs[0],
                                                       output: outputs[0], layer: layerName)
    }
}
