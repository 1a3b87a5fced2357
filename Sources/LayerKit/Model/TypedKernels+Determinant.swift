import Foundation
import LayerKitONNX

extension TypedKernels {
    /// Det-11 and 22: the determinant of each square matrix of the last two
    /// axes ([*, M, M] to [*]), by Gaussian elimination with partial
    /// pivoting in Double, rounded to the input's float type.
    static func determinant(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let x = try input(0, inputs, node)
        guard x.elementType.isFloatingPoint else { throw node.error("X is \(x.elementType); Det takes float types") }
        guard x.shape.count >= 2, x.shape[x.shape.count - 1] == x.shape[x.shape.count - 2] else {
            throw node.error("X must be [*, M, M] square matrices, got \(Tensor.describe(x.shape))")
        }
        let m = x.shape[x.shape.count - 1], values = x.doubles()
        let matrices = m == 0 ? x.shape.dropLast(2).reduce(1, *) : values.count / (m * m)
        let determinants = (0..<matrices).map { k in
            var a = Array(values[(k * m * m)..<((k + 1) * m * m)])
            var determinant = 1.0
            for column in 0..<m {
                // The row of the largest pivot, swapped up: each swap flips the sign.
                let pivot = (column..<m).max { abs(a[$0 * m + column]) < abs(a[$1 * m + column]) } ?? column
                guard a[pivot * m + column] != 0 else { return 0.0 }
                if pivot != column {
                    for j in 0..<m { a.swapAt(pivot * m + j, column * m + j) }
                    determinant = -determinant
                }
                determinant *= a[column * m + column]
                for row in (column + 1)..<m {
                    let factor = a[row * m + column] / a[column * m + column]
                    for j in column..<m { a[row * m + j] -= factor * a[column * m + j] }
                }
            }
            return determinant
        }
        return [try TypedTensor(x.elementType, shape: Array(x.shape.dropLast(2)), doubles: determinants)]
    }
}
