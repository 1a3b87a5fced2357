import Foundation
import LayerKitONNX

/// Ops that place their input's elements into a new tensor whose shape an
/// input gives (known at prepare, `ONNXShapeInputs`): CenterCropPad (a
/// centered crop or zero pad per axis), MaxUnpool (each element back at
/// its MaxPool index) and Col2Im (sliding blocks summed back into an image).
extension TypedKernels {
    /// CenterCropPad-18: each of `axes` (every axis by default) cropped or
    /// zero-padded to its extent in `shape`, centered; an odd difference
    /// leaves the extra element at the end. Moves bits, exact for every type.
    static func centerCropPad(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["axes"])
        let x = try input(0, inputs, node), extents = try input(1, inputs, node)
        guard extents.elementType.isInteger, extents.shape.count == 1 else {
            throw node.error("shape must be a 1-D integer tensor, got \(extents)")
        }
        let axes = try (node.ints("axes") ?? Array(x.shape.indices)).map { try node.axis($0, rank: x.shape.count) }
        let targets = extents.integers()
        guard Set(axes).count == axes.count, targets.count == axes.count, targets.allSatisfy({ $0 >= 0 }) else {
            throw node.error("shape \(targets) must give one extent >= 0 for each of axes \(axes), each axis once")
        }
        var shape = x.shape
        for (axis, target) in zip(axes, targets) {
            guard target <= Int64(ONNXImporter.maxValueElements) else {
                throw node.error("shape \(targets) holds more than LayerKit's limit for one tensor")
            }
            shape[axis] = Int(target)
        }
        let count = try ONNXFolding.checkedCount(shape, node)
        // Per axis, the input index of output index 0: a crop starts inside the input, a pad before it.
        let starts = zip(x.shape, shape).map { input, output in input >= output ? (input - output) / 2 : -((output - input) / 2) }
        let zero = try TypedTensor(zerosOf: x.elementType, shape: [1])
        var sources = [(Int, Int)](repeating: (1, 0), count: count)
        for i in 0..<count {
            var rest = i, offset = 0, stride = 1, inside = true
            for axis in shape.indices.reversed() {
                let at = rest % shape[axis] + starts[axis]
                rest /= shape[axis]
                inside = inside && (0..<x.shape[axis]).contains(at)
                offset += at * stride
                stride *= x.shape[axis]
            }
            if inside { sources[i] = (0, offset) }
        }
        return [try TypedTensor.gathering([x, zero], sources, shape: shape)]
    }

    /// MaxUnpool-9 to 22: each element of X at its flat index in I (as
    /// MaxPool gave it) in zeros of the shape MaxPool's kernel_shape,
    /// strides and pads invert; with `output_shape`, that result at the
    /// origin of zeros of the larger given shape, as ONNX's reference
    /// places it. Moves bits, exact for every type.
    static func maxUnpool(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["kernel_shape", "pads", "strides"])
        let x = try input(0, inputs, node), indices = try input(1, inputs, node)
        let spatial = x.shape.count - 2
        guard spatial >= 1, indices.shape == x.shape, indices.elementType.isInteger else {
            throw node.error("X must be [N, C, D1, ...] and I integer indices of its shape; got X \(x) and I \(indices)")
        }
        let window = try SlidingWindow(node, spatial: spatial, kernelRequired: true)
        var unpooled = Array(x.shape.prefix(2))
        for d in 0..<spatial {
            unpooled.append((x.shape[d + 2] - 1) * window.strides[d] - window.pads[d] - window.pads[d + spatial] + window.kernel[d])
        }
        var shape = unpooled
        if let given = optional(2, inputs) {
            let values = given.integers()
            guard given.shape == [x.shape.count], zip(values, unpooled).allSatisfy({ $0 >= Int64($1) && $0 <= Int64(ONNXImporter.maxValueElements) }) else {
                throw node.error("output_shape \(values) must give \(x.shape.count) extents, each at least the unpooled "
                                 + "\(Tensor.describe(unpooled))")
            }
            shape = values.map { Int($0) }
        }
        let count = try ONNXFolding.checkedCount(shape, node), unpooledCount = try ONNXFolding.checkedCount(unpooled, node)
        // Per element of the unpooled result, the element of X placed there (-1: none).
        var placed = [Int](repeating: -1, count: unpooledCount)
        for (i, index) in indices.integers().enumerated() {
            guard index >= 0, index < Int64(unpooledCount) else {
                throw node.error("index \(index) of I (element \(i)) is outside the unpooled \(Tensor.describe(unpooled))")
            }
            placed[Int(index)] = i
        }
        let zero = try TypedTensor(zerosOf: x.elementType, shape: [1])
        let sources = (0..<count).map { i -> (Int, Int) in
            var (rest, offset, stride) = (i, 0, 1)
            for axis in shape.indices.reversed() {
                let at = rest % shape[axis]
                rest /= shape[axis]
                guard at < unpooled[axis] else { return (1, 0) }
                offset += at * stride
                stride *= unpooled[axis]
            }
            return placed[offset] < 0 ? (1, 0) : (0, placed[offset])
        }
        return [try TypedTensor.gathering([x, zero], sources, shape: shape)]
    }

    /// Col2Im-18: input [N, C * prod(block_shape), L], the L sliding blocks
    /// of an image of `image_shape` (as an im2col of those strides,
    /// dilations and pads made them), summed back into [N, C, image...].
    /// Float types in Double; integers wrap to their width.
    static func col2Im(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["dilations", "pads", "strides"])
        let x = try input(0, inputs, node), imageInput = try input(1, inputs, node), blockInput = try input(2, inputs, node)
        let (image, block) = (imageInput.integers(), blockInput.integers())
        guard imageInput.shape.count == 1, image.count == block.count, !image.isEmpty,
              image.allSatisfy({ $0 > 0 && $0 <= Int64(ONNXImporter.maxValueElements) }),
              block.allSatisfy({ $0 > 0 && $0 <= Int64(ONNXImporter.maxValueElements) }) else {
            throw node.error("image_shape \(image) and block_shape \(block) must give one extent > 0 per spatial axis each")
        }
        let spatial = image.count
        var window = try SlidingWindow(node, spatial: spatial, kernelRequired: false)
        window.kernel = block.map { Int($0) }
        let kernelSize = try node.elementCount(window.kernel)
        // Per axis, how many blocks fit the padded image.
        let blocks = try (0..<spatial).map { d -> Int in
            let span = window.dilations[d] * (window.kernel[d] - 1) + 1
            let room = Int(image[d]) + window.pads[d] + window.pads[d + spatial] - span
            guard room >= 0 else { throw node.error("block \(block) does not fit image \(image) with pads \(window.pads)") }
            return room / window.strides[d] + 1
        }
        guard x.shape.count == 3, x.shape[1] % kernelSize == 0, x.shape[2] == blocks.reduce(1, *) else {
            throw node.error("input \(Tensor.describe(x.shape)) must be [N, C * \(kernelSize), \(blocks.reduce(1, *))] for "
                             + "block_shape \(block) sliding over image_shape \(image)")
        }
        let (n, channels) = (x.shape[0], x.shape[1] / kernelSize)
        let imageExtents = image.map { Int($0) }
        let shape = [n, channels] + imageExtents
        _ = try ONNXFolding.checkedCount(shape, node)
        let pixels = imageExtents.reduce(1, *), positions = x.shape[2]
        // Per (kernel offset, block), the image pixel it adds to, nil when in the padding.
        var targets = [Int?](repeating: nil, count: kernelSize * positions)
        for k in 0..<kernelSize {
            for b in 0..<positions {
                var (kRest, bRest, pixel, stride, inside) = (k, b, 0, 1, true)
                for d in (0..<spatial).reversed() {
                    let at = (bRest % blocks[d]) * window.strides[d] - window.pads[d] + (kRest % window.kernel[d]) * window.dilations[d]
                    (kRest, bRest) = (kRest / window.kernel[d], bRest / blocks[d])
                    inside = inside && (0..<imageExtents[d]).contains(at)
                    pixel += at * stride
                    stride *= imageExtents[d]
                }
                if inside { targets[k * positions + b] = pixel }
            }
        }
        func sum<T>(_ values: [T], zero: T, add: (T, T) -> T) -> [T] {
            var out = [T](repeating: zero, count: n * channels * pixels)
            for plane in 0..<(n * channels) {
                for (j, target) in targets.enumerated() {
                    guard let target else { continue }
                    out[plane * pixels + target] = add(out[plane * pixels + target], values[plane * kernelSize * positions + j])
                }
            }
            return out
        }
        if x.elementType.isFloatingPoint {
            return [try TypedTensor(x.elementType, shape: shape, doubles: sum(x.doubles(), zero: 0, add: +))]
        }
        guard x.elementType.isInteger else { throw node.error("Col2Im of \(x.elementType) is not supported") }
        return [try TypedTensor(x.elementType, shape: shape, integers: sum(x.integers(), zero: 0, add: &+))]
    }
}

/// The kernel_shape (or Col2Im's block), strides, dilations and pads
/// attributes of a sliding window over `spatial` axes, checked: each value
/// at most `ONNXNodeContext.maxWindowValue`, extents and steps >= 1, pads
/// >= 0 ([begin..., end...]).
private struct SlidingWindow {
    var kernel: [Int]
    let strides: [Int]
    let dilations: [Int]
    let pads: [Int]

    init(_ node: ONNXNodeContext, spatial: Int, kernelRequired: Bool) throws {
        if kernelRequired, try node.ints("kernel_shape") == nil { throw node.error("attribute 'kernel_shape' is required") }
        let ones = Array(repeating: 1, count: spatial)
        kernel = try node.spatial("kernel_shape", default: ones)
        strides = try node.spatial("strides", default: ones)
        dilations = try node.spatial("dilations", default: ones)
        pads = try node.spatial("pads", default: Array(repeating: 0, count: 2 * spatial))
        for (name, values, count, least) in [("kernel_shape", kernel, spatial, 1), ("strides", strides, spatial, 1),
                                             ("dilations", dilations, spatial, 1), ("pads", pads, 2 * spatial, 0)]
            where values.count != count || values.contains(where: { $0 < least }) {
            throw node.error("\(name) \(values) must give \(count) values of \(least) or more")
        }
    }
}
