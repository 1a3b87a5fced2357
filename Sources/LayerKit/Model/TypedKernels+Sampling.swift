import Foundation
import LayerKitONNX

/// Sampling at computed coordinates: GridSample (the input read at a
/// grid of normalized coordinates, by nearest, linear or cubic
/// interpolation, over any number of spatial axes) and AffineGrid (the
/// grid an affine transform of the output's own coordinates gives). The
/// rules are ONNX's reference (after PyTorch's grid_sample and
/// affine_grid); float types compute in Double and round to their type.
extension TypedKernels {
    /// GridSample-16 (4-D input; modes bilinear, nearest, bicubic), 20 (N-D;
    /// linear, nearest, cubic) and 22 (types): X [N, C, D1, ...] read at
    /// grid [N, O1, ..., r] (its last axis the coordinates, the innermost
    /// axis's first, each -1 to 1 across the input), giving [N, C, O1, ...].
    static func gridSample(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["align_corners", "mode", "padding_mode"])
        let x = try input(0, inputs, node), grid = try input(1, inputs, node)
        guard x.elementType.isFloatingPoint, grid.elementType.isFloatingPoint else {
            throw node.error("X is \(x.elementType) and grid \(grid.elementType); LayerKit samples float types")
        }
        let spatial = Array(x.shape.dropFirst(2))
        guard x.shape.count >= 3, node.opset >= 20 || x.shape.count == 4 else {
            throw node.error("X must be [N, C, " + (node.opset >= 20 ? "D1, ...]" : "H, W] (before opset 20)")
                             + ", got \(Tensor.describe(x.shape))")
        }
        guard grid.shape.count == x.shape.count, grid.shape[0] == x.shape[0], grid.shape.last == spatial.count else {
            throw node.error("grid \(Tensor.describe(grid.shape)) must be [\(x.shape[0]), output extents..., \(spatial.count)] "
                             + "for X \(Tensor.describe(x.shape))")
        }
        let sampler = try GridSampler(node, spatial: spatial)
        let (n, channels) = (x.shape[0], x.shape[1])
        let outputExtents = Array(grid.shape.dropFirst().dropLast())
        let shape = [n, channels] + outputExtents
        _ = try ONNXFolding.checkedCount(shape, node)
        let (volume, positions) = (spatial.reduce(1, *), outputExtents.reduce(1, *))
        let (values, coordinates) = (x.doubles(), grid.doubles())
        var out = [Double](repeating: 0, count: shape.reduce(1, *))
        for item in 0..<n {
            for position in 0..<positions {
                let at = (item * positions + position) * spatial.count
                let taps = try sampler.taps(Array(coordinates[at..<(at + spatial.count)].reversed()))
                for c in 0..<channels {
                    let base = (item * channels + c) * volume
                    out[(item * channels + c) * positions + position] = taps.reduce(0) { $0 + $1.weight * values[base + $1.offset] }
                }
            }
        }
        return [try TypedTensor(x.elementType, shape: shape, doubles: out)]
    }

    /// AffineGrid-20: theta [N, 2, 3] (or [N, 3, 4]) applied to the
    /// normalized coordinates (x, y[, z], 1) of every position of an output
    /// of `size` [N, C, H, W] (or [N, C, D, H, W]), giving [N, H, W, 2]
    /// (or [N, D, H, W, 3]).
    static func affineGrid(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["align_corners"])
        let theta = try input(0, inputs, node), size = try input(1, inputs, node)
        let alignCorners = try node.int("align_corners", default: 0) != 0
        guard theta.elementType.isFloatingPoint else { throw node.error("theta is \(theta.elementType); the op takes floats") }
        let sizes = size.integers()
        guard size.shape.count == 1, sizes.count == 4 || sizes.count == 5, sizes.allSatisfy({ $0 >= 0 }) else {
            throw node.error("size must be [N, C, H, W] or [N, C, D, H, W] of extents >= 0, got \(sizes)")
        }
        let rank = sizes.count - 2
        guard theta.shape == [Int(sizes[0]), rank, rank + 1] else {
            throw node.error("theta \(Tensor.describe(theta.shape)) must be [\(sizes[0]), \(rank), \(rank + 1)] for size \(sizes)")
        }
        let extents = sizes.dropFirst(2).map { Int($0) }
        let shape = [Int(sizes[0])] + extents + [rank]
        _ = try ONNXFolding.checkedCount(shape, node)
        // Per axis, each index's normalized coordinate: the corner pixels' centers at -1 and 1, or their outer edges.
        let bases = extents.map { extent -> [Double] in
            let size = Double(extent)
            return (0..<extent).map { i -> Double in
                guard !alignCorners else { return extent > 1 ? -1 + 2 * Double(i) / (size - 1) : -1 }
                return -1 + (2 * Double(i) + 1) / size
            }
        }
        let matrices = theta.doubles(), positions = extents.reduce(1, *)
        var out: [Double] = []
        out.reserveCapacity(shape.reduce(1, *))
        for item in 0..<shape[0] {
            let matrix = matrices[(item * rank * (rank + 1))...]
            for position in 0..<positions {
                // The homogeneous point (x, y[, z], 1): x from the innermost axis.
                var point = [Double](repeating: 1, count: rank + 1), rest = position
                for axis in (0..<rank).reversed() {
                    point[rank - 1 - axis] = bases[axis][rest % extents[axis]]
                    rest /= extents[axis]
                }
                for row in 0..<rank {
                    out.append((0...rank).reduce(0) { $0 + matrix[matrix.startIndex + row * (rank + 1) + $1] * point[$1] })
                }
            }
        }
        return [try TypedTensor(theta.elementType, shape: shape, doubles: out)]
    }
}

/// GridSample's attributes and the input's spatial extents: where one
/// grid point reads the input.
private struct GridSampler {
    enum Mode { case nearest, linear, cubic }
    enum Padding: String { case zeros, border, reflection }

    let mode: Mode
    let padding: Padding
    let alignCorners: Bool
    let extents: [Int]

    init(_ node: ONNXNodeContext, spatial: [Int]) throws {
        let name = try node.string("mode", default: node.opset >= 20 ? "linear" : "bilinear")
        let modes: [String: Mode] = node.opset >= 20 ? ["nearest": .nearest, "linear": .linear, "cubic": .cubic]
            : ["nearest": .nearest, "bilinear": .linear, "bicubic": .cubic]
        guard let mode = modes[name] else {
            throw node.error("mode '\(name)' is not " + modes.keys.sorted().joined(separator: ", ") + " (opset \(node.opset))")
        }
        let paddingName = try node.string("padding_mode", default: "zeros")
        guard let padding = Padding(rawValue: paddingName) else {
            throw node.error("padding_mode '\(paddingName)' is not zeros, border or reflection")
        }
        (self.mode, self.padding, self.extents) = (mode, padding, spatial)
        alignCorners = try node.int("align_corners", default: 0) != 0
    }

    /// The input elements (offsets in one channel's volume) one grid point
    /// reads, with their weights; `normalized` is the point's coordinates,
    /// outermost axis first. An element the padding makes zero is left out.
    func taps(_ normalized: [Double]) throws -> [(offset: Int, weight: Double)] {
        var taps = [(offset: 0, weight: 1.0)]
        for (axis, value) in normalized.enumerated() {
            let axisTaps = try self.axisTaps(value, extent: extents[axis])
            taps = taps.flatMap { tap in
                axisTaps.map { (offset: tap.offset * extents[axis] + $0.index, weight: tap.weight * $0.weight) }
            }
        }
        return taps
    }

    /// Along one axis of `extent`: the indices a coordinate reads and their weights.
    private func axisTaps(_ normalized: Double, extent: Int) throws -> [(index: Int, weight: Double)] {
        guard normalized.isFinite else {
            throw LayerKitError.invalidModel("GridSample: the grid holds \(normalized); coordinates must be finite")
        }
        let size = Double(extent)
        // Pixel centers' coordinates run 0...extent-1; the sampled range ends at the corner centers or their edges.
        var x = alignCorners ? (normalized + 1) / 2 * (size - 1) : ((normalized + 1) * size - 1) / 2
        let (low, high) = alignCorners ? (0, size - 1) : (-0.5, size - 0.5)
        if mode == .nearest { x = x.rounded(.toNearestOrEven) }
        if x < low || x > high {
            switch padding {
            case .zeros: break
            case .border: x = min(max(x, 0), size - 1)
            case .reflection: x = Self.reflect(x, low, high)
            }
        }
        // Far outside with zeros padding, every tap reads zero (and the index would not fit an Int).
        guard x.magnitude < size + 4 else { return [] }
        let first = Int(x.rounded(.down)), t = x - x.rounded(.down)
        let weighted: [(Int, Double)]
        switch mode {
        case .nearest: weighted = [(Int(x), 1)]
        case .linear: weighted = [(first, 1 - t), (first + 1, t)]
        case .cubic: weighted = zip(first - 1...first + 2, Self.cubicCoefficients(t)).map { ($0, $1) }
        }
        return weighted.compactMap { index, weight in pixel(index, extent: extent, low, high).map { (index: $0, weight: weight) } }
    }

    /// The input index that index `i` reads under the padding; nil for a zero.
    private func pixel(_ i: Int, extent: Int, _ low: Double, _ high: Double) -> Int? {
        switch padding {
        case .zeros: return (0..<extent).contains(i) ? i : nil
        case .border: return min(max(i, 0), extent - 1)
        // Reflected, then cut toward zero as the reference does; held in range whatever rounding did.
        case .reflection: return min(max(Int(Self.reflect(Double(i), low, high)), 0), extent - 1)
        }
    }

    /// `x` reflected off the borders `low` and `high` until it lies between them.
    static func reflect(_ x: Double, _ low: Double, _ high: Double) -> Double {
        let span = high - low
        guard span > 0 else { return low }
        guard x < low || x > high else { return x }
        let distance = x < low ? low - x : x - high
        let flips = (distance / span).rounded(.towardZero), rest = distance - flips * span
        let even = flips.truncatingRemainder(dividingBy: 2) == 0
        return (x < low) == even ? low + rest : high - rest
    }

    /// Keys' cubic convolution weights (a = -0.75) of the four pixels
    /// around a point `t` (0 to 1) past the second one.
    static func cubicCoefficients(_ t: Double) -> [Double] {
        let a = -0.75
        let near = { (d: Double) in ((a + 2) * d - (a + 3)) * d * d + 1 }
        let far = { (d: Double) in ((a * d - 5 * a) * d + 8 * a) * d - 4 * a }
        return [far(t + 1), near(t), near(1 - t), far(2 - t)]
    }
}
