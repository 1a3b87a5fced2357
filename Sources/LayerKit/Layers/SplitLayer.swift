import Foundation

/// ONNX Split: the input cut along one axis into consecutive parts of the
/// given sizes, one output each (the converter resolves ONNX's forms: sizes
/// given, equal parts, `num_outputs` with a smaller last part). Any rank on
/// the CPU; on the GPU for ranks 1 to 4 along any axis (ShuffleNet's and
/// GLU's channel halves), one `Shaders/window.comp` dispatch per output.
public final class SplitLayer: ElementMovingLayer, Sendable {
    /// The axis the input is cut along (non-negative).
    public let axis: Int
    /// The extent of each output along `axis`.
    public let sizes: [Int]

    /// A split along `axis` into parts of `sizes` (at least one part, none
    /// negative); throws otherwise or for a negative axis.
    public init(axis: Int, sizes: [Int]) throws {
        self.axis = try LayerChecks.nonNegativeAxis(axis, layer: "Split")
        guard !sizes.isEmpty, sizes.allSatisfy({ $0 >= 0 }) else {
            throw LayerKitError.invalidParameter("Split: sizes \(sizes) must be one or more extents >= 0")
        }
        self.sizes = sizes
    }

    public var layerName: String { "Split" }

    /// The input's shape with `axis` of each size; throws unless the sizes
    /// add up to the input's extent along `axis`.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        try LayerChecks.requireAxis(axis, of: shape, layer: layerName)
        var total = 0
        for size in sizes {
            let (sum, overflow) = total.addingReportingOverflow(size)
            guard !overflow else { throw LayerKitError.invalidParameter("Split: sizes \(sizes) add past Int.max") }
            total = sum
        }
        guard total == shape[axis] else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): sizes \(sizes) add up to \(total), not the extent \(shape[axis]) of axis \(axis) of "
                + Tensor.describe(shape))
        }
        return sizes.map { size in
            var part = shape
            part[axis] = size
            return part
        }
    }

    /// Output `k`'s window of an input of `shape`: its part along `axis`.
    private func windows(for shape: [Int]) throws -> [ElementWindow] {
        let parts = try outputShapes(forInputShapes: [shape])
        var offset = 0
        return parts.map { part in
            var starts = Array(repeating: 0, count: shape.count)
            starts[axis] = offset
            offset += part[axis]
            return ElementWindow(inputShape: shape, outputShape: part, starts: starts)
        }
    }

    func moveElements<Element>(inputs: [UnsafeBufferPointer<Element>], inputShapes: [[Int]],
                               outputs: [UnsafeMutableBufferPointer<Element>]) throws {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let windows = try windows(for: inputShapes[0])
        guard outputs.count == windows.count else {
            throw LayerKitError.shapeMismatch("\(layerName) makes \(windows.count) outputs; \(outputs.count) were given")
        }
        for (window, output) in zip(windows, outputs) { window.copy(from: inputs[0], to: output) }
    }

    public var hasGPUImplementation: Bool { true }

    /// Creates the pipeline on `context`, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try ElementWindow.kernel(on: context) }

    /// One `Shaders/window.comp` dispatch per output, each reading its part.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == sizes.count else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image and \(sizes.count) output images")
        }
        let kernel = try ElementWindow.kernel(on: commandBuffer.context)
        // The image's shape is the tensor's padded with trailing 1s: the axis is the same.
        for (window, output) in zip(try windows(for: inputs[0].shape), outputs) {
            try window.encode(kernel, commandBuffer: commandBuffer, input: inputs[0], output: output, layer: layerName)
        }
    }
}
