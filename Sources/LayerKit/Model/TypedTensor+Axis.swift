import Foundation

/// Cutting a tensor into the slices of one axis and stacking slices back
/// (a Scan's inputs and outputs, a Loop's scan outputs), for every element
/// type: elements move as bytes (or strings), never converted.
extension TypedTensor {
    /// Slice `index` of `axis`, without that axis.
    func slice(_ index: Int, of axis: Int) throws -> TypedTensor {
        let outer: Int = shape[..<axis].reduce(1, *)
        let length: Int = shape[axis]
        let inner: Int = shape[(axis + 1)...].reduce(1, *)
        var shape = shape
        shape.remove(at: axis)
        // Runs of `inner` elements, one per outer position, starting at these elements.
        let starts: [Int] = (0..<outer).map { o in (o * length + index) * inner }
        if elementType == .string {
            let parts: [String] = starts.flatMap { start in strings[start..<(start + inner)] }
            return try TypedTensor(shape: shape, strings: parts)
        }
        let width = elementType.byteWidth ?? 1
        var part: [UInt8] = []
        part.reserveCapacity(outer * inner * width)
        for start in starts { part += bytes[(start * width)..<((start + inner) * width)] }
        return try TypedTensor(elementType: elementType, shape: shape, bytes: part)
    }

    /// `slices`, all of one shape and type, stacked along a new `axis`
    /// (0 to their rank).
    static func stacking(_ slices: [TypedTensor], along axis: Int) throws -> TypedTensor {
        guard let first = slices.first else { throw LayerKitError.shapeMismatch("no slices to stack") }
        guard slices.allSatisfy({ $0.shape == first.shape && $0.elementType == first.elementType }) else {
            throw LayerKitError.shapeMismatch("the slices to stack differ: "
                                              + slices.map(\.description).joined(separator: ", "))
        }
        var shape = first.shape
        shape.insert(slices.count, at: axis)
        let outer: Int = first.shape[..<axis].reduce(1, *)
        let inner: Int = first.shape[axis...].reduce(1, *)
        if first.elementType == .string {
            var all: [String] = []
            for o in 0..<outer {
                for slice in slices { all += slice.strings[(o * inner)..<((o + 1) * inner)] }
            }
            return try TypedTensor(shape: shape, strings: all)
        }
        let run = inner * (first.elementType.byteWidth ?? 1)
        var all: [UInt8] = []
        all.reserveCapacity(first.bytes.count * slices.count)
        for o in 0..<outer {
            for slice in slices { all += slice.bytes[(o * run)..<((o + 1) * run)] }
        }
        return try TypedTensor(elementType: first.elementType, shape: shape, bytes: all)
    }
}
