extension ONNXDataType {
    /// Boolean, one byte (raw_data) or one int32 (int32_data) per element.
    public static let bool = ONNXDataType(rawValue: 9)
}

extension ONNXTensor {
    /// The values of a BOOL tensor (any nonzero byte or word is true), in
    /// row-major order, checked against the count `dims` give.
    public func bools() throws -> [Bool] {
        guard dataType == .bool else { throw failure("has type \(dataType); a BOOL tensor was expected") }
        let count = try elementCount()
        let values = rawData.map { $0.map { $0 != 0 } } ?? int32Data.map { $0 != 0 }
        guard values.count == count else {
            throw failure("holds \(values.count) values where dims \(dims) need \(count)")
        }
        return values
    }
}
