import Foundation
import LayerKitONNX

/// Ops on the diagonals of matrices: Trilu (keeps a triangle of the last
/// two axes) and EyeLike (ones on one diagonal). Diagonal k holds the
/// elements at row i, column i + k.
extension TypedKernels {
    /// Trilu: the elements on and above diagonal k (`upper`, the default)
    /// or on and below it, zero elsewhere (an empty string for strings);
    /// k is the optional int64 scalar input, 0 when absent. Moves bits, so
    /// exact for every type.
    static func trilu(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["upper"])
        let x = try input(0, inputs, node)
        guard x.shape.count >= 2 else { throw node.error("input must have rank 2 or more, got \(Tensor.describe(x.shape))") }
        let k = inputs.count > 1 && inputs[1] != nil ? try scalarInteger(input(1, inputs, node), "k", node) : 0
        let upper = try node.int("upper", default: 1) != 0
        let (rows, columns) = (x.shape[x.shape.count - 2], x.shape[x.shape.count - 1])
        let zero = try TypedTensor(zerosOf: x.elementType, shape: [1])
        let sources = (0..<x.count).map { i -> (Int, Int) in
            // Compared in Int64: k may be any int64, far past the matrix.
            let diagonal = Int64(i % columns) - Int64((i / columns) % rows)
            return (upper ? diagonal >= k : diagonal <= k) ? (0, i) : (1, 0)
        }
        return [try TypedTensor.gathering([x, zero], sources, shape: x.shape)]
    }

    /// EyeLike: a 2-D tensor of the input's shape and of `dtype` (the
    /// input's type when absent) with ones on diagonal k, zeros elsewhere.
    static func eyeLike(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["dtype", "k"])
        let x = try input(0, inputs, node)
        guard x.shape.count == 2 else { throw node.error("input must be 2-D, got \(Tensor.describe(x.shape))") }
        var type = x.elementType
        if let code = try node.node.int("dtype") {
            guard let given = ElementType(rawValue: code) else { throw node.error("dtype \(code) is not an ONNX element type") }
            type = given
        }
        guard type != .string, !type.isComplex else { throw node.error("EyeLike of \(type) is not supported") }
        let k = Int64(try node.int("k", default: 0))
        let columns = x.shape[1]
        let values = (0..<x.count).map { i -> Int64 in Int64(i % columns) - Int64(i / columns) == k ? 1 : 0 }
        return [try TypedTensor(type, shape: x.shape, integers: values)]
    }
}
