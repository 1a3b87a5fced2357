/// How a sliding window (pooling, convolution) is padded: ONNX's `pads`
/// and `auto_pad`, resolved per spatial axis by `window(...)`.
public enum Padding: Sendable, Equatable {
    /// Explicit zero-or-more cells before and after each spatial axis, in
    /// ONNX order: all begins, then all ends (2D: [top, left, bottom, right]).
    case explicit([Int])
    /// `SAME_UPPER`: output extent ceil(input / stride), the odd cell of
    /// padding at the end.
    case sameUpper
    /// `SAME_LOWER`: as `sameUpper`, the odd cell at the beginning.
    case sameLower
    /// `VALID`: no padding.
    case valid

    /// One spatial axis of a window: the padding before and after it and
    /// the output extent.
    public struct Axis: Sendable, Equatable {
        /// Cells of padding before the input (negative: input cells skipped).
        public let begin: Int
        /// Cells of padding after the input.
        public let end: Int
        /// The output extent.
        public let output: Int
    }

    /// Resolves spatial axis `axis` (of `spatialRank`) for an input extent,
    /// kernel extent, stride and dilation, as onnxruntime does:
    ///
    /// - explicit and valid: output = (input + begin + end - dilated kernel) / stride + 1,
    ///   rounded down, or up with `ceilMode`; a last window that would start
    ///   past the input and the begin padding is dropped (ONNX PR 5741).
    /// - same: the total padding is (ceil(input / stride) - 1) * stride +
    ///   dilated kernel - input, split in halves (truncated toward zero, so it may
    ///   be negative, as onnxruntime computes it).
    ///
    /// Throws for non-positive kernel, stride or dilation, negative or
    /// miscounted explicit pads, and a dilated kernel larger than the padded input.
    public func window(axis: Int, of spatialRank: Int, input: Int, kernel: Int, stride: Int, dilation: Int,
                       ceilMode: Bool, layer: String) throws -> Axis {
        guard kernel > 0, stride > 0, dilation > 0 else {
            throw LayerKitError.invalidParameter(
                "\(layer): kernel \(kernel), stride \(stride) and dilation \(dilation) must be positive")
        }
        let extent = (kernel - 1) * dilation + 1
        let begin: Int, end: Int
        switch self {
        case .explicit(let pads):
            guard pads.count == 2 * spatialRank, pads.allSatisfy({ $0 >= 0 }) else {
                throw LayerKitError.invalidParameter(
                    "\(layer): pads \(pads) must be \(2 * spatialRank) values >= 0 (all begins, then all ends)")
            }
            (begin, end) = (pads[axis], pads[spatialRank + axis])
        case .valid:
            (begin, end) = (0, 0)
        case .sameUpper, .sameLower:
            let needed = ((input + stride - 1) / stride - 1) * stride + extent - input
            begin = self == .sameUpper ? needed / 2 : (needed + 1) / 2
            end = needed - begin
        }
        let span = input + begin + end - extent
        guard span >= 0 else {
            throw LayerKitError.shapeMismatch(
                "\(layer): the window (\(extent) cells with dilation) is larger than the padded input (\(input + begin + end)) on spatial axis \(axis)")
        }
        var output = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1
        if ceilMode, (output - 1) * stride >= input + begin { output -= 1 }
        return Axis(begin: begin, end: end, output: output)
    }
}
