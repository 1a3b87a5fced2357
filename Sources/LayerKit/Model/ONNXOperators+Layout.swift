import Foundation

/// The ops that move elements about or resample them: Transpose, Pad,
/// Resize and Upsample.
extension ONNXOperators {
    static let layout: [ONNXOperator] = [
        ONNXOperator("Transpose", through: 25, inputs: 1...1, types: .moved, transpose),  // 13 to 25: types
        // 2: pads (before, paddings); 11: pads and constant_value as inputs; 18: axes input; 19: wrap mode; others: types.
        // Pad-2 to -10 take pads and value as attributes; from 11 as inputs
        // (constant_value optional), and from 18 an optional axes input.
        ONNXOperator("Pad", through: 25, arity: { ($0 >= 18 ? 2...4 : $0 >= 11 ? 2...3 : 1...1, 1...1) }, pad),
        // 11: roi, sizes, coordinate modes, cubic; 13: roi and scales optional; 18: axes,
        // keep_aspect_ratio_policy, antialias (1 refused); 19: half_pixel_symmetric.
        // Resize-10: X and scales; from 11 X, roi, scales, sizes (roi and
        // scales required in 11, optional from 13).
        ONNXOperator("Resize", through: 19, arity: { ($0 >= 13 ? 1...4 : $0 >= 11 ? 3...4 : 2...2, 1...1) }, resize),
        // 7: scales attribute (before, height_scale and width_scale); 9: scales as an input; 10: deprecated (Resize).
        // Upsample-1 takes height_scale and width_scale, -7 scales as an attribute, -9 as an input.
        ONNXOperator("Upsample", through: 9, arity: { ($0 >= 9 ? 2...2 : 1...1, 1...1) }, replacedBy: "Resize", upsample),
    ]

    // MARK: - Transpose

    static func transpose(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["perm"])
        let rank = try node.rank(0)
        let perm = try node.ints("perm") ?? Array((0..<rank).reversed())
        guard perm.count == rank, Set(perm) == Set(0..<rank) else {
            throw node.error("perm \(perm) is not a permutation of the \(rank) axes of the input "
                             + "\(Tensor.describe(try node.shape(0)))")
        }
        return ConvertedNode(layer: try TransposeLayer(perm: perm), inputs: [0])
    }

    // MARK: - Pad

    static func pad(_ node: ONNXNodeContext) throws -> ConvertedNode {
        let shape = try node.shape(0)
        let rank = shape.count
        let modeName = try node.string("mode", default: "constant")
        guard let mode = PadLayer.Mode(rawValue: modeName) else {
            throw node.error("mode '\(modeName)' is not one of constant, reflect, edge, wrap")
        }
        var pads: [Int]
        var value: Float = 0
        var axes = Array(0..<rank)
        if node.opset < 11 {
            // Pad-1 called the pads `paddings` (in the same order).
            let name = node.opset < 2 ? "paddings" : "pads"
            try node.requireAttributes(["mode", name, "value"])
            guard let given = try node.ints(name) else { throw node.error("attribute '\(name)' is required") }
            pads = given
            value = try node.float("value", default: 0)
        } else {
            try node.requireAttributes(["mode"])
            pads = try node.constantInts(1, "pads")
            if let constant = try node.optionalConstant(2, "constant_value"), constant.count > 0 {
                value = try scalar(constant, "constant_value", node)
            }
            if node.opset >= 18, node.has(3) {
                let given = try node.constantInts(3, "axes")
                axes = try given.map { try node.axis($0, rank: rank) }
                guard Set(axes).count == axes.count else { throw node.error("axes \(given) repeat an axis") }
            }
        }
        guard pads.count == 2 * axes.count else {
            throw node.error("pads \(pads) must hold \(2 * axes.count) values (a begin and an end for each of "
                             + "\(axes.count) axes), got \(pads.count)")
        }
        let limit = ONNXImporter.maxValueElements
        // magnitude, not abs(): abs(Int64.min) traps, and pads come straight from the file.
        guard pads.allSatisfy({ $0.magnitude <= limit }) else {
            throw node.error("pads \(pads) reach past LayerKit's limit of \(limit) elements for one tensor")
        }
        var begins = Array(repeating: 0, count: rank), ends = Array(repeating: 0, count: rank)
        for (k, axis) in axes.enumerated() {
            begins[axis] = pads[k]
            ends[axis] = pads[axes.count + k]
        }
        for axis in 0..<rank where shape[axis] + begins[axis] + ends[axis] < 0 {
            throw node.error("pads \(begins[axis]), \(ends[axis]) crop axis \(axis) of \(Tensor.describe(shape)) below zero")
        }
        return ConvertedNode(layer: try PadLayer(begins: begins, ends: ends, mode: mode, value: value), inputs: [0])
    }

    // MARK: - Resize and Upsample

    /// A Float32 constant input that may be omitted by an empty name or an empty tensor.
    private static func optionalFloats(_ node: ONNXNodeContext, _ i: Int, _ what: String) throws -> [Float]? {
        guard let tensor = try node.optionalConstant(i, what), tensor.count > 0 else { return nil }
        return Array(tensor.elements)
    }

    static func resize(_ node: ONNXNodeContext) throws -> ConvertedNode {
        let shape = try node.shape(0)
        let rank = shape.count
        if node.opset < 11 {
            try node.requireAttributes(["mode"])
            guard let scales = try optionalFloats(node, 1, "scales") else { throw node.error("scales (input 1) are empty") }
            return try resampling(node, shape: shape, scales: scales, sizes: nil, legacy: true)
        }
        try node.requireAttributes(["antialias", "axes", "coordinate_transformation_mode", "cubic_coeff_a",
                                    "exclude_outside", "extrapolation_value", "keep_aspect_ratio_policy", "mode",
                                    "nearest_mode"])
        guard try node.int("antialias", default: 0) == 0 else {
            throw node.error("antialias = 1 is not supported (only antialias = 0)")
        }
        var axes = Array(0..<rank)
        if let given = try node.ints("axes") {
            axes = try given.map { try node.axis($0, rank: rank) }
            guard Set(axes).count == axes.count else { throw node.error("axes \(given) repeat an axis") }
        }
        var scales = try optionalFloats(node, 2, "scales")
        var sizes: [Int]? = nil
        if node.has(3), let initializer = node.initializers[3], initializer.dims.contains(0) {
            sizes = nil
        } else if node.has(3) {
            sizes = try node.constantInts(3, "sizes")
        }
        guard (scales == nil) != (sizes == nil) else {
            throw node.error(scales == nil ? "neither scales (input 2) nor sizes (input 3) is given"
                             : "scales (input 2) and sizes (input 3) are both given; ONNX allows one")
        }
        if let given = scales {
            guard given.count == axes.count else {
                throw node.error("scales \(given) must hold \(axes.count) values, one per axis resized")
            }
            var all = Array(repeating: Float(1), count: rank)
            for (k, axis) in axes.enumerated() { all[axis] = given[k] }
            scales = all
        }
        if let given = sizes {
            guard given.count == axes.count else {
                throw node.error("sizes \(given) must hold \(axes.count) values, one per axis resized")
            }
            guard given.allSatisfy({ $0 > 0 }) else { throw node.error("sizes \(given) would make an empty output") }
            var all = shape
            for (k, axis) in axes.enumerated() { all[axis] = given[k] }
            let policy = try node.string("keep_aspect_ratio_policy", default: "stretch")
            switch policy {
            case "stretch":
                sizes = all
            case "not_larger", "not_smaller":
                let ratios = axes.map { Float(all[$0]) / Float(max(1, shape[$0])) }
                let scale = (policy == "not_larger" ? ratios.min() : ratios.max()) ?? 1
                var fitted = Array(repeating: Float(1), count: rank)
                for axis in axes {
                    fitted[axis] = scale
                    let extent = (scale * Float(shape[axis])).rounded()
                    guard extent < Float(ONNXImporter.maxValueElements) else {
                        throw node.error("its output would hold more than LayerKit's limit of elements")
                    }
                    all[axis] = Int(extent)
                }
                return try resampling(node, shape: shape, scales: fitted, sizes: all, legacy: false)
            default:
                throw node.error("keep_aspect_ratio_policy '\(policy)' is not one of stretch, not_larger, not_smaller")
            }
        }
        return try resampling(node, shape: shape, scales: scales, sizes: sizes, legacy: false)
    }

    static func upsample(_ node: ONNXNodeContext) throws -> ConvertedNode {
        let shape = try node.shape(0)
        let scales: [Float]
        if node.opset >= 9 {
            try node.requireAttributes(["mode"])
            guard let given = try optionalFloats(node, 1, "scales") else { throw node.error("scales (input 1) are empty") }
            scales = given
        } else if node.opset >= 7 {
            try node.requireAttributes(["mode", "scales"])
            guard let given = try node.node.floats("scales") else { throw node.error("attribute 'scales' is required") }
            scales = given
        } else {
            // Upsample-1 (experimental): a 4-D input scaled along H and W.
            try node.requireAttributes(["mode", "height_scale", "width_scale"])
            guard let height = try node.node.float("height_scale"), let width = try node.node.float("width_scale") else {
                throw node.error("attributes 'height_scale' and 'width_scale' are required")
            }
            guard shape.count == 4 else { throw node.error("input \(Tensor.describe(shape)) must have rank 4 (opset \(node.opset))") }
            scales = [1, 1, height, width]
        }
        return try resampling(node, shape: shape, scales: scales, sizes: nil, legacy: true)
    }

    /// A Resize layer for `shape` from per-axis `scales` (the output extents
    /// floor(extent x scale), in Float32 as onnxruntime computes them) or
    /// `sizes` (with scales, when not given, of size / extent). `legacy`:
    /// Upsample and Resize-10 (asymmetric coordinates, `simple` nearest).
    private static func resampling(_ node: ONNXNodeContext, shape: [Int], scales given: [Float]?, sizes: [Int]?,
                                   legacy: Bool) throws -> ConvertedNode {
        let rank = shape.count
        var modeName = try node.string("mode", default: "nearest")
        if legacy, modeName == "bilinear" { modeName = "linear" }
        guard let mode = ResizeLayer.Mode(rawValue: modeName), !legacy || mode != .cubic else {
            throw node.error("mode '\(modeName)' is not one of \(legacy ? "nearest, linear" : "nearest, linear, cubic")")
        }
        var output = shape
        var scales = Array(repeating: Float(1), count: rank)
        if let sizes {
            guard sizes.count == rank else { throw node.error("sizes \(sizes) must hold \(rank) values") }
            output = sizes
            scales = given ?? zip(sizes, shape).map { Float($0) / Float(max(1, $1)) }
        } else if let given {
            guard given.count == rank else {
                throw node.error("scales \(given) must hold \(rank) values, one per axis of \(Tensor.describe(shape))")
            }
            guard given.allSatisfy({ $0 > 0 && $0.isFinite }) else {
                throw node.error("scales \(given) must be positive and finite")
            }
            scales = given
            for axis in 0..<rank {
                let extent = given[axis] * Float(shape[axis])
                guard extent < Float(ONNXImporter.maxValueElements) else {
                    throw node.error("scales \(given) would make an output past LayerKit's limit of "
                                     + "\(ONNXImporter.maxValueElements >> 20)M elements for one tensor")
                }
                output[axis] = Int(extent)
            }
        }
        if shape.allSatisfy({ $0 > 0 }), output.contains(0) {
            throw node.error("its output \(Tensor.describe(output)) would be empty (scales \(scales))")
        }
        let coordinates: String, nearest: String
        if legacy {
            (coordinates, nearest) = ("asymmetric", "simple")
        } else {
            coordinates = try node.string("coordinate_transformation_mode", default: "half_pixel")
            nearest = try node.string("nearest_mode", default: "round_prefer_floor")
        }
        guard let coordinateMode = ResizeLayer.CoordinateMode(rawValue: coordinates) else {
            throw node.error("coordinate_transformation_mode '\(coordinates)' is not one of "
                             + ResizeLayer.CoordinateMode.allCases.map(\.rawValue).joined(separator: ", "))
        }
        guard let nearestMode = ResizeLayer.NearestMode(rawValue: nearest), legacy || nearestMode != .simple else {
            throw node.error("nearest_mode '\(nearest)' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil")
        }
        var roi: [Float] = []
        if coordinateMode == .tfCropAndResize {
            guard let given = try optionalFloats(node, 1, "roi") else {
                throw node.error("tf_crop_and_resize needs the roi (input 1)")
            }
            var axes = Array(0..<rank)
            if let listed = try node.ints("axes") { axes = try listed.map { try node.axis($0, rank: rank) } }
            guard given.count == 2 * axes.count else {
                throw node.error("roi \(given) must hold \(2 * axes.count) values (starts, then ends)")
            }
            roi = Array(repeating: 0, count: rank) + Array(repeating: 1, count: rank)
            for (k, axis) in axes.enumerated() {
                roi[axis] = given[k]
                roi[rank + axis] = given[axes.count + k]
            }
        }
        let layer = try ResizeLayer(outputShape: output, scales: scales, mode: mode, coordinateMode: coordinateMode,
                                    nearestMode: nearestMode, roi: roi,
                                    cubicCoefficient: node.float("cubic_coeff_a", default: -0.75),
                                    excludeOutside: node.int("exclude_outside", default: 0) != 0,
                                    extrapolationValue: node.float("extrapolation_value", default: 0),
                                    name: node.node.opType)
        return ConvertedNode(layer: layer, inputs: [0])
    }
}
