import LayerKitCore
// Constant tensors read at load: float weights (float32, float16, or int8
// with their quantization), integer parameters (shapes, axes, paddings),
// and DENSIFY's sparse weights expanded.

extension TFLiteGraphBuilder {
    /// The element count of `shape`, refused when it overflows or exceeds `limit`.
    func count(_ shape: [Int], _ name: String, limit: Int) throws -> Int {
        var count = 1
        for dim in shape {
            let (product, overflow) = count.multipliedReportingOverflow(by: dim)
            guard !overflow, product <= limit else {
                throw LayerKitError.invalidModel("tensor '\(name)' of shape \(shape) is larger than its data allows")
            }
            count = product
        }
        return count
    }

    /// Constant tensor `index`'s values as floats: float32 or float16 data, or
    /// int8/uint8/int32 data dequantized with its scale and zero point. A sparse
    /// tensor's stored values are read only by DENSIFY (`sparse`).
    mutating func floats(_ index: Int, sparse: Bool = false) throws -> [Float] {
        let tensor = tensors[index]
        if let values = hostConstants[index] {
            guard values.count == (try count(tensor.shape, tensor.name, limit: values.count)) else {
                throw LayerKitError.invalidModel("tensor '\(tensor.name)' of shape \(tensor.shape) is computed at "
                                                 + "load with \(values.count) values")
            }
            return values
        }
        guard (tensor.sparsity != nil) == sparse else {
            throw LayerKitError.invalidModel("constant '\(tensor.name)' is " + (sparse ? "not sparse" : "sparse")
                                             + (sparse ? "" : "; only DENSIFY reads it"))
        }
        let data = model.data(tensor)
        let elementSize = [0: 4, 1: 2, 2: 4, 3: 1, 9: 1][tensor.type]
        guard let elementSize else {
            throw LayerKitError.invalidModel("constant '\(tensor.name)' is \(tensor.typeName), not a float or "
                                             + "quantized integer tensor")
        }
        // A sparse tensor's shape is its dense one; its data holds the stored values only.
        let count = tensor.sparsity != nil ? data.count / elementSize
            : try self.count(tensor.shape, tensor.name, limit: data.count / elementSize)
        guard data.count == count * elementSize else {
            throw LayerKitError.invalidModel("constant '\(tensor.name)' of shape \(tensor.shape) has \(data.count) "
                                             + "bytes, not \(count * elementSize)")
        }
        let base = data.startIndex
        func word(_ i: Int, _ size: Int) -> UInt32 {
            (0..<size).reduce(UInt32(0)) { $0 | UInt32(data[base + i * size + $1]) << (8 * $1) }
        }
        switch tensor.type {
        case 0: return (0..<count).map { Float(bitPattern: word($0, 4)) }
        case 1: return (0..<count).map { Float(halfBits: UInt16(word($0, 2))) }
        default:
            let integers: [Int] = (0..<count).map {
                let raw = word($0, elementSize)
                return tensor.type == 3 ? Int(raw) : tensor.type == 9 ? Int(Int8(truncatingIfNeeded: raw))
                    : Int(Int32(bitPattern: raw))
            }
            return try dequantized(integers, tensor)
        }
    }

    /// Quantized values as floats: scale * (q - zero_point), per tensor or along `quantized_dimension`.
    func dequantized(_ values: [Int], _ tensor: TFLiteTensor) throws -> [Float] {
        guard let quantization = tensor.quantization, quantization.isQuantized else {
            throw LayerKitError.invalidModel("constant '\(tensor.name)' is \(tensor.typeName) without quantization "
                                             + "parameters, where float values are read")
        }
        let scales = quantization.scale
        let zeros = quantization.zeroPoint.isEmpty ? [0] : quantization.zeroPoint
        guard scales.count == 1 || (tensor.shape.indices.contains(quantization.dimension)
                                    && tensor.shape[quantization.dimension] == scales.count),
              zeros.count == 1 || zeros.count == scales.count else {
            throw LayerKitError.invalidModel("constant '\(tensor.name)' has \(scales.count) scales and \(zeros.count) "
                                             + "zero points for shape \(tensor.shape)")
        }
        // The channel of element i along the quantized dimension.
        let inner = scales.count == 1 ? 1 : tensor.shape[(quantization.dimension + 1)...].reduce(1, *)
        return values.indices.map { i in
            let channel = scales.count == 1 ? 0 : (i / inner) % scales.count
            return scales[channel] * Float(values[i] - zeros[zeros.count == 1 ? 0 : channel])
        }
    }

    /// Constant int32 or int64 tensor `index`'s values (shapes, axes, paddings).
    func integers(_ index: Int, _ what: String) throws -> [Int] {
        let tensor = tensors[index]
        let data = model.data(tensor)
        guard tensor.type == 2 || tensor.type == 4, !data.isEmpty || tensor.shape.contains(0) else {
            throw LayerKitError.invalidModel("\(what) '\(tensor.name)' must be a constant int32 tensor")
        }
        let size = tensor.type == 2 ? 4 : 8
        let count = try self.count(tensor.shape, tensor.name, limit: data.count / size)
        guard data.count == count * size else {
            throw LayerKitError.invalidModel("\(what) '\(tensor.name)' has \(data.count) bytes, not \(count * size)")
        }
        return (0..<count).map { i in
            let raw = (0..<size).reduce(UInt64(0)) { $0 | UInt64(data[data.startIndex + i * size + $1]) << (8 * $1) }
            return size == 4 ? Int(Int32(truncatingIfNeeded: raw)) : Int(Int64(bitPattern: raw))
        }
    }

    /// DEQUANTIZE of a constant (float16 weights, or int8 weights with their
    /// scales): computed at load, the output a float constant. (Of an
    /// activation it passes the real value on: `add(_:code:)`.)
    mutating func dequantize(_ op: TFLiteOperator) throws {
        let (input, output) = (op.inputs[0], op.outputs[0])
        setConstant(output, try floats(input))
    }

    /// DENSIFY: a sparse constant's values placed in its dense shape at load
    /// (TACO format: each dimension, in traversal order, dense or CSR; block
    /// dimensions after the tensor's own, mapped to them by `block_map`).
    mutating func densify(_ op: TFLiteOperator) throws {
        let tensor = tensors[op.inputs[0]]
        guard let sparsity = tensor.sparsity else {
            throw LayerKitError.invalidModel("DENSIFY's input '\(tensor.name)' has no sparsity parameters")
        }
        let values = try floats(op.inputs[0], sparse: true)
        let shape = tensors[op.outputs[0]].shape
        let (rank, levels) = (shape.count, sparsity.traversalOrder.count)
        // The walk below recurses once per level: a hostile file may not make it deep.
        guard levels <= 16 else {
            throw LayerKitError.invalidModel("'\(tensor.name)' has \(levels) sparse dimensions; LayerKit reads up to 16")
        }
        let bad = LayerKitError.invalidModel("the sparsity parameters of '\(tensor.name)' do not fit its shape "
                                             + "\(shape) and \(values.count) values")
        guard levels == rank + sparsity.blockMap.count, sparsity.dimensions.count == levels,
              Set(sparsity.traversalOrder) == Set(0..<levels), sparsity.blockMap.allSatisfy({ (0..<rank).contains($0) })
        else { throw bad }
        // A dense result far larger than its file is refused rather than allocated.
        let total = try count(shape, tensors[op.outputs[0]].name, limit: max(1 << 16, 64 * model.bytes.count))
        // The size of each traversed dimension (dense ones; a block's size is its dense size).
        var sizes = Array(repeating: 1, count: levels)
        for (level, dimension) in zip(sparsity.traversalOrder, sparsity.dimensions) where !dimension.sparse {
            sizes[level] = dimension.denseSize
        }
        var dense = [Float](repeating: 0, count: total)
        var coordinates = Array(repeating: 0, count: levels)
        var visited = 0
        // Walks level `level` from position `position` of the previous level.
        func walk(_ level: Int, _ position: Int) throws {
            if level == levels {
                guard values.indices.contains(position) else { throw bad }
                var offset = 0
                for axis in 0..<rank {
                    var coordinate = coordinates[axis]
                    for (block, mapped) in sparsity.blockMap.enumerated() where mapped == axis {
                        let (scaled, overflow) = coordinate.multipliedReportingOverflow(by: sizes[rank + block])
                        guard !overflow, scaled <= total else { throw bad }
                        coordinate = scaled + coordinates[rank + block]
                    }
                    guard (0..<shape[axis]).contains(coordinate) else { throw bad }
                    offset = offset * shape[axis] + coordinate
                }
                dense[offset] = values[position]
                return
            }
            visited += 1
            guard visited <= 4 * total + 16 else { throw bad }
            let dimension = sparsity.dimensions[level], axis = sparsity.traversalOrder[level]
            if dimension.sparse {
                guard position + 1 < dimension.segments.count else { throw bad }
                let (start, end) = (dimension.segments[position], dimension.segments[position + 1])
                guard 0 <= start, start <= end, end <= dimension.indices.count else { throw bad }
                for k in start..<end {
                    guard dimension.indices[k] >= 0 else { throw bad }
                    coordinates[axis] = dimension.indices[k]
                    try walk(level + 1, k)
                }
            } else {
                guard dimension.denseSize >= 0, dimension.denseSize <= total else { throw bad }
                for i in 0..<dimension.denseSize {
                    coordinates[axis] = i
                    try walk(level + 1, position * dimension.denseSize + i)
                }
            }
        }
        try walk(0, 0)
        setConstant(op.outputs[0], dense)
    }
}
