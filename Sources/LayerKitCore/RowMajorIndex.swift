/// A multi-index over a shape in row-major order, as the elements of a
/// tensor are stored: the walk every element-by-element kernel over an
/// arbitrary rank (transposes, reductions, generated values) takes.
public enum RowMajorIndex {
    /// Steps `index` to the next element of `shape` (the last axis fastest),
    /// back to all zeros after the last element.
    public static func step(_ index: inout [Int], through shape: [Int]) {
        var axis = shape.count - 1
        while axis >= 0 {
            index[axis] += 1
            if index[axis] < shape[axis] { return }
            index[axis] = 0
            axis -= 1
        }
    }
}
