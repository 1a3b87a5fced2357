import Foundation

/// ONNX Slice: a strided window of the input along some axes, with the
/// spec's rules for negative starts and ends (counted from the end), ends
/// past the extent (INT64_MAX, INT64_MIN) and negative steps, all clamped
/// as the spec says. Any rank on the CPU; on the GPU for ranks 1 to 4
/// (any steps), by `Shaders/window.comp`.
public final class SliceLayer: WindowLayer, Sendable {
    /// Per sliced axis: its start, end and step as the file gives them.
    public let starts: [Int]
    public let ends: [Int]
    /// The sliced axes (non-negative, distinct).
    public let axes: [Int]
    public let steps: [Int]

    /// A slice of `axes` (default: the first `starts.count` axes; a
    /// converter resolves negative ONNX axes first) from `starts` to `ends`
    /// by `steps` (default 1). Throws for lists of different lengths, a
    /// negative or repeated axis, or a zero step.
    public init(starts: [Int], ends: [Int], axes: [Int]? = nil, steps: [Int]? = nil) throws {
        let axes = axes ?? Array(starts.indices)
        let steps = steps ?? Array(repeating: 1, count: starts.count)
        guard ends.count == starts.count, axes.count == starts.count, steps.count == starts.count else {
            throw LayerKitError.invalidParameter(
                "Slice: starts (\(starts.count)), ends (\(ends.count)), axes (\(axes.count)) and steps (\(steps.count)) "
                + "must have the same length")
        }
        for axis in axes { _ = try LayerChecks.nonNegativeAxis(axis, layer: "Slice") }
        guard Set(axes).count == axes.count else {
            throw LayerKitError.invalidParameter("Slice: axes \(axes) list an axis twice")
        }
        guard !steps.contains(0) else { throw LayerKitError.invalidParameter("Slice: steps \(steps) must not be 0") }
        (self.starts, self.ends, self.axes, self.steps) = (starts, ends, axes, steps)
    }

    public var layerName: String { "Slice" }

    /// The window this slice takes of an input of `shape`.
    func window(for shape: [Int]) throws -> ElementWindow {
        var begin = Array(repeating: 0, count: shape.count)
        var step = Array(repeating: 1, count: shape.count)
        var extent = shape
        for (i, axis) in axes.enumerated() {
            try LayerChecks.requireAxis(axis, of: shape, layer: layerName)
            let (start, count) = Self.resolve(start: starts[i], end: ends[i], step: steps[i], extent: shape[axis])
            begin[axis] = start
            extent[axis] = count
            // One element or none: any step reads the same (and a huge one stays out of the shader's arithmetic).
            step[axis] = count > 1 ? steps[i] : 1
        }
        return ElementWindow(inputShape: shape, outputShape: extent, starts: begin, steps: step)
    }

    /// ONNX's rule for one axis of extent `extent`: a negative start or end
    /// counts from the end; then for a positive step both clamp to
    /// [0, extent], for a negative one the start to [0, extent - 1] and the
    /// end to [-1, extent - 1]. Returns the first index read and how many.
    static func resolve(start: Int, end: Int, step: Int, extent: Int) -> (start: Int, count: Int) {
        // A negative value plus a non-negative extent cannot overflow.
        var (start, end) = (start < 0 ? start + extent : start, end < 0 ? end + extent : end)
        let count: Int
        if step > 0 {
            start = min(max(start, 0), extent)
            end = min(max(end, 0), extent)
            count = end > start ? (end - start - 1) / step + 1 : 0
        } else {
            start = min(max(start, 0), extent - 1)
            end = min(max(end, -1), extent - 1)
            // Truncating division by the negative step (never negated: INT64_MIN).
            count = start > end ? 1 - (start - end - 1) / step : 0
        }
        return (count > 0 ? start : 0, count)
    }

    public var hasGPUImplementation: Bool { true }

    /// `Shaders/window.comp` over the input image.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1 else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image and 1 output image")
        }
        // The image's shape is the tensor's padded with trailing 1s, which no (non-negative) axis slices.
        try window(for: inputs[0].shape).encode(ElementWindow.kernel(on: commandBuffer.context), commandBuffer: commandBuffer,
                                                input: inputs[0], output: outputs[0], layer: layerName)
    }
}
