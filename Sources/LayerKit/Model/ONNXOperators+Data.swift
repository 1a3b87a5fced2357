import Foundation

/// The ops that move elements without computing on them: reshapes
/// (Reshape, Flatten, Squeeze, Unsqueeze, all a `ReshapeLayer`), Concat,
/// Split, Slice, Gather, GatherElements, ScatterElements, Expand, Tile,
/// DepthToSpace and SpaceToDepth.
/// Their shapes, axes, indices and repeats must be constants (the load-time
/// folding makes the graph's own shape arithmetic constant first).
extension ONNXOperators {
    static let data: [ONNXOperator] = [
        // 5: shape as an input (before, an attribute); 14: allowzero; others: types
        ONNXOperator("Reshape", through: 25, arity: { ($0 >= 5 ? 2...2 : 1...1, 1...1) }, types: .moved, reshape),
        ONNXOperator("Flatten", through: 25, inputs: 1...1, types: .moved, flatten),  // 9 to 25: types (11: negative axis)
        // 11: negative axes; 13: axes as an input; others: types
        ONNXOperator("Squeeze", through: 25, arity: { ($0 >= 13 ? 1...2 : 1...1, 1...1) }, types: .moved, squeeze),
        // 11: negative axes; 13: axes as an input; others: types
        ONNXOperator("Unsqueeze", through: 25, arity: { ($0 >= 13 ? 2...2 : 1...1, 1...1) }, types: .moved, unsqueeze),
        // 4: axis required (before, default 1); 11: negative axis; 13: types
        ONNXOperator("Concat", through: 13, inputs: 1...Int.max, types: .moved, concat),
        // 2: split as an attribute only; 11: negative axis; 13: split as an input; 18: num_outputs.
        // Split-1 took the sizes as an optional input or an attribute; 2 to 11 as the attribute; 13 on as the input.
        ONNXOperator("Split", through: 18, arity: { ($0 == 1 || $0 >= 13 ? 1...2 : 1...1, 1...Int.max) }, types: .moved, split),
        // 10: starts, ends, axes, steps as inputs; 11: negative axes; 13: types
        ONNXOperator("Slice", through: 13, arity: { ($0 >= 10 ? 3...5 : 1...1, 1...1) }, types: .moved, slice),
        ONNXOperator("Gather", through: 13, inputs: 2...2, types: .moved, gather),  // 11: negative indices; 13: types
        ONNXOperator("GatherElements", through: 13, inputs: 2...2, types: .moved, gatherElements),  // 13: types
        // 13: types; 16: reduction (add, mul refused); 18: reduction max, min (refused)
        ONNXOperator("ScatterElements", through: 18, inputs: 3...3, types: .moved, scatterElements),
        // Scatter (opsets 9 and 10) is ScatterElements under its old name; 11: deprecated (ScatterElements).
        ONNXOperator("Scatter", through: 9, inputs: 3...3, types: .moved, replacedBy: "ScatterElements", scatterElements),
        ONNXOperator("Expand", through: 13, inputs: 2...2, types: .moved, expand),  // 13: types
        // 6: repeats per axis (Tile-1's tiles and axis inputs refused); 13: types.
        // Tile-1 took (input, tiles, axis); 6 on (input, repeats).
        ONNXOperator("Tile", through: 13, arity: { ($0 >= 6 ? 2...2 : 3...3, 1...1) }, types: .moved, tile),
        // 11: mode (DCR, CRD); 13: types; 28: a function body, same meaning
        ONNXOperator("DepthToSpace", through: 28, inputs: 1...1, types: .moved, depthToSpace),
        ONNXOperator("SpaceToDepth", through: 28, inputs: 1...1, types: .moved, spaceToDepth),  // 13: types; 28: mode (DCR, CRD)
    ]

    // MARK: - Reshapes

    static func flatten(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["axis"])
        let shape = try node.shape(0)
        let axis = try node.int("axis", default: 1)
        let split = axis < 0 ? axis + shape.count : axis
        guard (0...shape.count).contains(split) else { throw node.error("axis \(axis) is out of range") }
        let output = [try node.elementCount(Array(shape[..<split])), try node.elementCount(Array(shape[split...]))]
        return ConvertedNode(layer: try ReshapeLayer(outputShape: output, name: "Flatten"), inputs: [0])
    }

    /// The target shape from input 1 (opset 5 on) or the `shape` attribute
    /// (before): 0 copies the input's extent unless `allowzero`, -1 is inferred.
    static func reshape(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(node.opset >= 5 ? ["allowzero"] : ["shape", "consumed_inputs"])
        let input = try node.shape(0)
        let allowZero = try node.int("allowzero", default: 0) != 0
        var output: [Int]
        if node.opset >= 5 {
            output = try node.constantInts(1, "the target shape")
        } else {
            guard let shape = try node.ints("shape") else { throw node.error("attribute 'shape' is required") }
            output = shape
        }
        for (i, extent) in output.enumerated() where extent == 0 && !allowZero {
            guard i < input.count else { throw node.error("shape entry \(i) is 0 but the input has rank \(input.count)") }
            output[i] = input[i]
        }
        let total = try node.elementCount(input)
        let unknown = output.indices.filter { output[$0] == -1 }
        guard unknown.count <= 1, output.allSatisfy({ $0 >= -1 }) else {
            throw node.error("target shape \(output) is not valid")
        }
        if let i = unknown.first {
            let known = try node.elementCount(output.filter { $0 != -1 })
            guard known > 0, total % known == 0 else {
                throw node.error("cannot reshape \(Tensor.describe(input)) to \(output)")
            }
            output[i] = total / known
        }
        guard try node.elementCount(output) == total else {
            throw node.error("cannot reshape \(Tensor.describe(input)) (\(total) elements) to \(output)")
        }
        return ConvertedNode(layer: try ReshapeLayer(outputShape: output, name: "Reshape"), inputs: [0])
    }

    /// Axes (attribute before opset 13, optional input 1 from 13) as
    /// non-negative, distinct axes of a tensor of `rank`.
    static func axes(_ node: ONNXNodeContext, inputFrom opset: Int, rank: Int) throws -> [Int]? {
        let given = node.opset >= opset ? (node.has(1) ? try node.constantInts(1, "axes") : nil) : try node.ints("axes")
        guard let given else { return nil }
        let axes = try given.map { try node.axis($0, rank: rank) }
        guard Set(axes).count == axes.count else { throw node.error("axes \(given) list an axis twice") }
        return axes
    }

    /// Squeeze: the listed axes of extent 1 removed, or every axis of extent 1.
    static func squeeze(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(node.opset >= 13 ? [] : ["axes"])
        let shape = try node.shape(0)
        let output: [Int]
        if let axes = try axes(node, inputFrom: 13, rank: shape.count) {
            for axis in axes where shape[axis] != 1 {
                throw node.error("axis \(axis) of input \(Tensor.describe(shape)) has extent \(shape[axis]), not 1")
            }
            output = shape.indices.filter { !axes.contains($0) }.map { shape[$0] }
        } else {
            output = shape.filter { $0 != 1 }
        }
        return ConvertedNode(layer: try ReshapeLayer(outputShape: output, name: "Squeeze"), inputs: [0])
    }

    /// Unsqueeze: extents of 1 inserted at the listed axes of the output.
    static func unsqueeze(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(node.opset >= 13 ? [] : ["axes"])
        let shape = try node.shape(0)
        let given = node.opset >= 13 ? try node.constantInts(1, "axes") : try node.ints("axes")
        guard let given, !given.isEmpty else { throw node.error("axes are required") }
        let rank = shape.count + given.count
        let axes = try given.map { try node.axis($0, rank: rank) }
        guard Set(axes).count == axes.count else { throw node.error("axes \(given) list an axis twice") }
        var extents = shape.makeIterator()
        let output = (0..<rank).map { axes.contains($0) ? 1 : extents.next() ?? 1 }
        return ConvertedNode(layer: try ReshapeLayer(outputShape: output, name: "Unsqueeze"), inputs: [0])
    }

    static func concat(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["axis"])
        // Concat-1 defaulted the axis to 1; from opset 4 it is required.
        guard let value = try node.node.int("axis") ?? (node.opset < 4 ? 1 : nil) else { throw node.error("axis is required") }
        let axis = try node.axis(value, rank: node.rank(0))
        return ConvertedNode(layer: try ConcatLayer(axis: axis), inputs: Array(node.node.inputs.indices))
    }

    // MARK: - Windows

    /// Split into the node's outputs: sizes given (attribute before opset
    /// 13, input from 13; Split-1 either), else `num_outputs` (opset 18 on:
    /// parts of ceil(extent / n), the last smaller), else equal parts.
    static func split(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(node.opset >= 18 ? ["axis", "num_outputs"] : node.opset >= 13 ? ["axis"] : ["axis", "split"])
        let shape = try node.shape(0)
        let axis = try node.axis(node.int("axis", default: 0), rank: shape.count)
        let (extent, parts) = (shape[axis], node.node.outputs.count)
        var sizes: [Int]?
        if (node.opset == 1 || node.opset >= 13), node.has(1) { sizes = try node.constantInts(1, "split") }
        if node.opset < 13, let attribute = try node.ints("split") { sizes = attribute }
        let numOutputs = try node.node.int("num_outputs")
        if let given = sizes {
            guard numOutputs == nil else { throw node.error("split and num_outputs are both given; give one") }
            guard given.count == parts, given.allSatisfy({ $0 >= 0 }) else {
                throw node.error("split \(given) must give \(parts) extents >= 0, one per output")
            }
        } else if let numOutputs {
            guard numOutputs == parts else {
                throw node.error("num_outputs is \(numOutputs) but the node has \(parts) outputs")
            }
            guard numOutputs >= 1, numOutputs <= extent else {
                throw node.error("num_outputs \(numOutputs) must be from 1 to the extent \(extent) of axis \(axis)")
            }
            let chunk = (extent + numOutputs - 1) / numOutputs
            let last = extent - chunk * (numOutputs - 1)
            guard last >= 0 else {
                throw node.error("axis \(axis) of extent \(extent) cannot be cut into \(numOutputs) parts of \(chunk)")
            }
            sizes = Array(repeating: chunk, count: numOutputs - 1) + [last]
        } else {
            guard extent % parts == 0 else {
                throw node.error("axis \(axis) of extent \(extent) does not split into \(parts) equal parts")
            }
            sizes = Array(repeating: extent / parts, count: parts)
        }
        return ConvertedNode(layer: try SplitLayer(axis: axis, sizes: sizes ?? []), inputs: [0])
    }

    /// Slice: starts, ends and axes as attributes before opset 10; from 10
    /// starts, ends, axes and steps as inputs 1 to 4.
    static func slice(_ node: ONNXNodeContext) throws -> ConvertedNode {
        let rank = try node.rank(0)
        let starts: [Int], ends: [Int], given: [Int]?, steps: [Int]?
        if node.opset < 10 {
            try node.requireAttributes(["starts", "ends", "axes"])
            guard let s = try node.ints("starts"), let e = try node.ints("ends") else {
                throw node.error("attributes 'starts' and 'ends' are required")
            }
            (starts, ends, given, steps) = (s, e, try node.ints("axes"), nil)
        } else {
            try node.requireAttributes([])
            starts = try node.constantInts(1, "starts")
            ends = try node.constantInts(2, "ends")
            given = node.has(3) ? try node.constantInts(3, "axes") : nil
            steps = node.has(4) ? try node.constantInts(4, "steps") : nil
        }
        guard ends.count == starts.count, (given?.count ?? starts.count) == starts.count,
              (steps?.count ?? starts.count) == starts.count else {
            throw node.error("starts (\(starts.count)), ends (\(ends.count)), axes (\(given?.count ?? starts.count)) "
                             + "and steps (\(steps?.count ?? starts.count)) must have the same length")
        }
        let axes = try (given ?? Array(starts.indices)).map { try node.axis($0, rank: rank) }
        guard Set(axes).count == axes.count else { throw node.error("axes \(given ?? []) list an axis twice") }
        return ConvertedNode(layer: try SliceLayer(starts: starts, ends: ends, axes: axes, steps: steps), inputs: [0])
    }

    /// Gather along `axis` by constant indices (int64 or int32), each checked here against the extent.
    static func gather(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["axis"])
        let shape = try node.shape(0)
        let axis = try node.axis(node.int("axis", default: 0), rank: shape.count)
        let indices = try node.constantInts(1, "the indices")
        let indicesShape = try node.shape(1)
        let extent = shape[axis]
        if let (position, index) = indices.enumerated().first(where: { !(-extent..<extent).contains($0.element) }) {
            throw node.error("index \(index) (entry \(position) of the indices) is out of range for axis \(axis) "
                             + "of input \(Tensor.describe(shape)) (valid: \(-extent) to \(extent - 1))")
        }
        return ConvertedNode(layer: try GatherLayer(axis: axis, indices: indices, indicesShape: indicesShape), inputs: [0])
    }

    /// GatherElements by constant indices of the input's rank; the layer checks their range.
    static func gatherElements(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["axis"])
        let axis = try node.axis(node.int("axis", default: 0), rank: node.rank(0))
        let layer = try GatherElementsLayer(axis: axis, indices: node.constantInts(1, "the indices"),
                                            indicesShape: node.shape(1))
        return ConvertedNode(layer: layer, inputs: [0])
    }

    /// ScatterElements (and Scatter) at constant indices, without reduction;
    /// the layer takes the data and the updates.
    static func scatterElements(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(node.node.opType == "ScatterElements" && node.opset >= 16 ? ["axis", "reduction"] : ["axis"])
        let reduction = try node.string("reduction", default: "none")
        guard reduction == "none" else {
            throw node.error("reduction '\(reduction)' is not supported (only 'none': the updates replace the data)")
        }
        let axis = try node.axis(node.int("axis", default: 0), rank: node.rank(0))
        let layer = try ScatterElementsLayer(axis: axis, indices: node.constantInts(1, "the indices"),
                                             indicesShape: node.shape(1))
        return ConvertedNode(layer: layer, inputs: [0, 2])
    }

    /// Expand to a constant shape (numpy broadcasting both ways).
    static func expand(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes([])
        let input = try node.shape(0)
        let shape = try node.constantInts(1, "the shape")
        guard shape.allSatisfy({ $0 >= 0 }) else { throw node.error("shape \(shape) has a negative extent") }
        return ConvertedNode(layer: try ExpandLayer(shape: shape, inputRank: input.count), inputs: [0])
    }

    /// Tile by constant repeats, one per input axis (opset 6 on).
    static func tile(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes([])
        guard node.opset >= 6 else { throw node.error("Tile before opset 6 (tiles and axis inputs) is not supported") }
        let rank = try node.rank(0)
        let repeats = try node.constantInts(1, "repeats")
        guard repeats.count == rank, repeats.allSatisfy({ $0 >= 0 }) else {
            throw node.error("repeats \(repeats) must give \(rank) counts >= 0, one per input axis")
        }
        return ConvertedNode(layer: try TileLayer(repeats: repeats), inputs: [0])
    }

    // MARK: - Blocks

    static func depthToSpace(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(node.opset >= 11 ? ["blocksize", "mode"] : ["blocksize"])
        guard let blockSize = try node.node.int("blocksize") else { throw node.error("attribute 'blocksize' is required") }
        let text = try node.string("mode", default: "DCR")
        guard let mode = DepthToSpaceLayer.Mode(rawValue: text) else { throw node.error("mode '\(text)' is not DCR or CRD") }
        return ConvertedNode(layer: try DepthToSpaceLayer(blockSize: blockSize, mode: mode), inputs: [0])
    }

    /// SpaceToDepth; opset 28 added DepthToSpace's modes.
    static func spaceToDepth(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(node.opset >= 28 ? ["blocksize", "mode"] : ["blocksize"])
        guard let blockSize = try node.node.int("blocksize") else { throw node.error("attribute 'blocksize' is required") }
        let text = try node.string("mode", default: "DCR")
        guard let mode = DepthToSpaceLayer.Mode(rawValue: text) else { throw node.error("mode '\(text)' is not DCR or CRD") }
        return ConvertedNode(layer: try SpaceToDepthLayer(blockSize: blockSize, mode: mode), inputs: [0])
    }
}
