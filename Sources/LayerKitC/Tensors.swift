import CLayerKitAPI
import LayerKit

/// The checks every tensor argument of the API goes through: an `lk_tensor`
/// is a plain LayerKit `Tensor`, so other files (models) read it with
/// `Handle.object(p, as: Tensor.self, ...)` too.
enum TensorArguments {
    /// A C `size_t` count as Swift sees it (`Int`): a value past `Int.max`
    /// (a negative number cast to size_t, usually) arrives negative.
    static func count(_ value: Int, _ what: String) throws -> Int {
        guard value >= 0 else { throw CAPIError.invalidArgument("\(what) is \(UInt(bitPattern: value)), too large") }
        return value
    }

    /// The shape a caller passed: `rank` (1...LK_MAX_RANK) dims of at least
    /// 1 at `shape`, whose element count LayerKit can hold (Tensor's own
    /// overflow-safe limit; the memory check is Tensor's allocation).
    static func shape(_ shape: UnsafePointer<Int64>?, rank: Int, _ what: String = "shape") throws -> [Int] {
        guard (1...Int(LK_MAX_RANK)).contains(rank) else {
            throw CAPIError(status: lk_status(LK_ERROR_SHAPE),
                            description: "the rank of \(what) must be 1 to \(LK_MAX_RANK), got \(UInt(bitPattern: rank))")
        }
        guard let shape else { throw CAPIError.invalidArgument("\(what) is NULL") }
        let dims = (0..<rank).map { Int(shape[$0]) }
        if let bad = dims.firstIndex(where: { $0 < 1 }) {
            throw CAPIError(status: lk_status(LK_ERROR_SHAPE),
                            description: "\(what)[\(bad)] is \(dims[bad]): every dimension must be at least 1")
        }
        _ = try Tensor.elementCount(of: dims)
        return dims
    }

    /// The tensor behind `pointer`, naming it `what` in errors.
    static func tensor(_ pointer: OpaquePointer?, _ what: String = "the tensor") throws -> Tensor {
        try Handle.object(pointer, as: Tensor.self, what)
    }

    /// Throws unless a caller's buffer of `count` floats is the tensor's size.
    static func requireElementCount(_ count: Int, of tensor: Tensor, buffer: String) throws {
        guard count == tensor.count else {
            let status = count < tensor.count && count >= 0 ? LK_ERROR_BUFFER_TOO_SMALL : LK_ERROR_SHAPE
            throw CAPIError(status: lk_status(status),
                            description: "count is \(UInt(bitPattern: count)) but the tensor of shape "
                                + "\(Tensor.describe(tensor.shape)) has \(tensor.count) elements (\(buffer))")
        }
    }
}

/// Writes `dims` to a caller's (shape, capacity, rank), as lk_tensor_shape and
/// lk_model_input_shape take them: the rank always (when `rank` is not NULL),
/// the dims when `shape` is not NULL and `capacity` holds them all.
func writeShape(_ dims: [Int64], to shape: UnsafeMutablePointer<Int64>?, capacity: Int,
                rank: UnsafeMutablePointer<Int>?) throws {
    rank?.pointee = dims.count
    guard let shape else { return }
    guard capacity >= dims.count else {
        throw CAPIError(status: lk_status(LK_ERROR_BUFFER_TOO_SMALL),
                        description: "the shape has rank \(dims.count), shape has room for "
                            + "\(UInt(bitPattern: capacity)) dims")
    }
    shape.update(from: dims, count: dims.count)
}

@c @implementation
public func lk_tensor_create(_ context: OpaquePointer?, _ shape: UnsafePointer<Int64>?, _ rank: Int,
                             _ data: UnsafePointer<Float>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> lk_status {
    out?.pointee = nil
    return withContext(context) { _ in
        guard out != nil else { throw CAPIError.invalidArgument("out is NULL") }
        let tensor = try Tensor(shape: TensorArguments.shape(shape, rank: rank))
        if let data { tensor.dataPointer.update(from: data, count: tensor.count) }
        try Handle.store(tensor, in: out)
    }
}

@c @implementation
public func lk_tensor_destroy(_ tensor: OpaquePointer?) { Handle.release(tensor) }

@c @implementation
public func lk_tensor_shape(_ context: OpaquePointer?, _ tensor: OpaquePointer?, _ shape: UnsafeMutablePointer<Int64>?,
                            _ capacity: Int, _ rank: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { _ in
        let tensor = try TensorArguments.tensor(tensor)
        try writeShape(tensor.shape.map(Int64.init), to: shape, capacity: capacity, rank: rank)
    }
}

@c @implementation
public func lk_tensor_element_count(_ context: OpaquePointer?, _ tensor: OpaquePointer?,
                                    _ count: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { _ in
        let tensor = try TensorArguments.tensor(tensor)
        guard let count else { throw CAPIError.invalidArgument("count is NULL") }
        count.pointee = tensor.count
    }
}

@c @implementation
public func lk_tensor_read(_ context: OpaquePointer?, _ tensor: OpaquePointer?, _ data: UnsafeMutablePointer<Float>?,
                           _ count: Int) -> lk_status {
    withContext(context) { _ in
        let tensor = try TensorArguments.tensor(tensor)
        guard let data else { throw CAPIError.invalidArgument("data is NULL") }
        try TensorArguments.requireElementCount(count, of: tensor, buffer: "data")
        data.update(from: tensor.dataPointer, count: tensor.count)
    }
}

@c @implementation
public func lk_tensor_write(_ context: OpaquePointer?, _ tensor: OpaquePointer?, _ data: UnsafePointer<Float>?,
                            _ count: Int) -> lk_status {
    withContext(context) { _ in
        let tensor = try TensorArguments.tensor(tensor)
        guard let data else { throw CAPIError.invalidArgument("data is NULL") }
        try TensorArguments.requireElementCount(count, of: tensor, buffer: "data")
        tensor.dataPointer.update(from: data, count: tensor.count)
    }
}
