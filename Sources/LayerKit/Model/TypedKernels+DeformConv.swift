import Foundation
import LayerKitONNX

/// DeformConv: a 2-D convolution whose kernel points are moved per output
/// position by learned offsets, the input read there by bilinear
/// interpolation (zero outside it), as ONNX's reference defines it. Float
/// types in Double, rounded to X's type.
extension TypedKernels {
    /// DeformConv-19 and 22 (types): X [N, C, H, W], W [oC, C / group, kH,
    /// kW], offset [N, offset_group * kH * kW * 2, oH, oW] (per kernel
    /// point, its (dy, dx)), optional B [oC] and mask [N, offset_group *
    /// kH * kW, oH, oW] (each sample's weight, default 1); oH and oW as a
    /// convolution of these pads, strides and dilations gives them.
    static func deformConv(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["dilations", "group", "kernel_shape", "offset_group", "pads", "strides"])
        let x = try input(0, inputs, node), w = try input(1, inputs, node), offset = try input(2, inputs, node)
        guard [x, w, offset].allSatisfy({ $0.elementType.isFloatingPoint && $0.shape.count == 4 }) else {
            throw node.error("X, W and offset must be 4-D float tensors (LayerKit's DeformConv is 2-D), got \(x), \(w) and \(offset)")
        }
        let (n, channels, height, width) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3])
        let (outChannels, kernel) = (w.shape[0], try node.spatial("kernel_shape", default: Array(w.shape[2...])))
        let group = try node.int("group", default: 1), offsetGroup = try node.int("offset_group", default: 1)
        let strides = try node.spatial("strides", default: [1, 1]), dilations = try node.spatial("dilations", default: [1, 1])
        let pads = try node.spatial("pads", default: [0, 0, 0, 0])
        guard group >= 1, offsetGroup >= 1, channels % group == 0, outChannels % group == 0, channels % offsetGroup == 0,
              w.shape[1] * group == channels, kernel == Array(w.shape[2...]), strides.count == 2, dilations.count == 2,
              pads.count == 4, (strides + dilations).allSatisfy({ $0 >= 1 }) else {
            throw node.error("X \(Tensor.describe(x.shape)) and W \(Tensor.describe(w.shape)) do not fit group \(group), "
                             + "offset_group \(offsetGroup), kernel_shape \(kernel), strides \(strides), dilations \(dilations), pads \(pads)")
        }
        let points = kernel[0] * kernel[1]
        let outHeight = (height + pads[0] + pads[2] - (kernel[0] - 1) * dilations[0] - 1) / strides[0] + 1
        let outWidth = (width + pads[1] + pads[3] - (kernel[1] - 1) * dilations[1] - 1) / strides[1] + 1
        guard offset.shape == [n, offsetGroup * points * 2, outHeight, outWidth] else {
            throw node.error("offset \(Tensor.describe(offset.shape)) must be [\(n), \(offsetGroup * points * 2), \(outHeight), \(outWidth)]")
        }
        let bias = optional(3, inputs), mask = optional(4, inputs)
        if let bias, bias.shape != [outChannels] { throw node.error("B \(bias) must be [\(outChannels)]") }
        if let mask, mask.shape != [n, offsetGroup * points, outHeight, outWidth] {
            throw node.error("mask \(Tensor.describe(mask.shape)) must be [\(n), \(offsetGroup * points), \(outHeight), \(outWidth)]")
        }
        let positions = outHeight * outWidth
        let shape = [n, outChannels, outHeight, outWidth]
        _ = try ONNXFolding.checkedCount(shape, node)
        // Per image, input channel and kernel point, the weighted sample each output position reads (im2col).
        var columns = [Double](repeating: 0, count: try ONNXFolding.checkedCount([n, channels, points, positions], node))
        let (values, shifts, weights) = (x.doubles(), offset.doubles(), mask?.doubles())
        for b in 0..<n {
            for c in 0..<channels {
                let g = c / (channels / offsetGroup), plane = (b * channels + c) * height * width
                for k in 0..<points {
                    for p in 0..<positions {
                        let shift = ((b * offsetGroup + g) * points + k) * 2 * positions + p
                        let y = Double((p / outWidth) * strides[0] - pads[0] + (k / kernel[1]) * dilations[0]) + shifts[shift]
                        let xx = Double((p % outWidth) * strides[1] - pads[1] + (k % kernel[1]) * dilations[1]) + shifts[shift + positions]
                        let scale = weights?[((b * offsetGroup + g) * points + k) * positions + p] ?? 1
                        columns[((b * channels + c) * points + k) * positions + p] =
                            scale * bilinear(values, plane, height, width, y: y, x: xx)
                    }
                }
            }
        }
        let (filters, biases) = (w.doubles(), bias?.doubles())
        let perGroup = channels / group
        var out = [Double](repeating: 0, count: shape.reduce(1, *))
        for b in 0..<n {
            for o in 0..<outChannels {
                let first = o / (outChannels / group) * perGroup, base = (b * outChannels + o) * positions
                for p in 0..<positions { out[base + p] = biases?[o] ?? 0 }
                for ic in 0..<perGroup {
                    for k in 0..<points {
                        let weight = filters[(o * perGroup + ic) * points + k], row = ((b * channels + first + ic) * points + k) * positions
                        for p in 0..<positions { out[base + p] += weight * columns[row + p] }
                    }
                }
            }
        }
        return [try TypedTensor(x.elementType, shape: shape, doubles: out)]
    }

    /// The plane at `plane` of `values` ([height, width]) at the point
    /// (y, x) by bilinear interpolation, each of the four pixels outside it zero.
    private static func bilinear(_ values: [Double], _ plane: Int, _ height: Int, _ width: Int, y: Double, x: Double) -> Double {
        guard y.isFinite, x.isFinite, y > -1, y < Double(height), x > -1, x < Double(width) else { return 0 }
        let (top, left) = (y.rounded(.down), x.rounded(.down))
        let (dy, dx) = (y - top, x - left)
        var sum = 0.0
        for (row, wy) in [(Int(top), 1 - dy), (Int(top) + 1, dy)] where (0..<height).contains(row) {
            for (column, wx) in [(Int(left), 1 - dx), (Int(left) + 1, dx)] where (0..<width).contains(column) {
                sum += wy * wx * values[plane + row * width + column]
            }
        }
        return sum
    }
}
