import CLayerKitAPI
import Foundation
import LayerKit

/// An `lk_tensor` of an element type other than float32: its value, never
/// changed after it is made (no call writes a typed tensor). A float32
/// `lk_tensor` is a plain LayerKit `Tensor`, whatever made it, so layers,
/// parity and `lk_tensor_read`/`write` see float32 tensors as before.
final class TypedTensorHandle {
    let value: TypedTensor
    init(_ value: TypedTensor) { self.value = value }
}

/// An `lk_tensor` of either kind.
enum AnyTensor {
    case float32(Tensor)
    case typed(TypedTensor)

    var shape: [Int] {
        switch self {
        case .float32(let tensor): tensor.shape
        case .typed(let value): value.shape
        }
    }

    var count: Int {
        switch self {
        case .float32(let tensor): tensor.count
        case .typed(let value): value.count
        }
    }

    var elementType: ElementType {
        switch self {
        case .float32: .float32
        case .typed(let value): value.elementType
        }
    }

    /// A new handle of `value`: a float32 value becomes a plain `Tensor`.
    static func handle(of value: TypedTensor) throws -> AnyObject {
        guard value.elementType == .float32 else { return TypedTensorHandle(value) }
        let tensor = try Tensor(shape: value.shape)
        // Little-endian float32 bytes are the host's floats (LayerKit runs on little-endian hosts only).
        value.bytes.withUnsafeBytes { bytes in
            // A zero-size value (an empty KV cache) may have no storage at all.
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            UnsafeMutableRawPointer(tensor.dataPointer).copyMemory(from: base, byteCount: bytes.count)
        }
        return tensor
    }

    /// The value as a `TypedTensor` (a float32 tensor's bytes are copied).
    var value: TypedTensor {
        get throws {
            switch self {
            case .float32(let tensor): try TypedTensor(elementType: .float32, shape: tensor.shape,
                                                       bytes: Array(UnsafeRawBufferPointer(start: tensor.dataPointer,
                                                                                           count: 4 * tensor.count)))
            case .typed(let value): value
            }
        }
    }
}

/// The checks every tensor argument of the API goes through: an `lk_tensor`
/// is a plain LayerKit `Tensor` when it is float32, a `TypedTensorHandle`
/// otherwise.
enum TensorArguments {
    /// A C `size_t` count as Swift sees it (`Int`): a value past `Int.max`
    /// (a negative number cast to size_t, usually) arrives negative.
    static func count(_ value: Int, _ what: String) throws -> Int {
        guard value >= 0 else { throw CAPIError.invalidArgument("\(what) is \(UInt(bitPattern: value)), too large") }
        return value
    }

    /// The shape a caller passed: `rank` (1...LK_MAX_RANK) dims of at least
    /// 0 at `shape`, whose element count LayerKit can hold (Tensor's own
    /// overflow-safe limit; the memory check is Tensor's allocation). A dim
    /// of 0 is a zero-size tensor, as ONNX has them: a decoder's first step
    /// takes an empty past (`[1, heads, 0, head size]`).
    static func shape(_ shape: UnsafePointer<Int64>?, rank: Int, _ what: String = "shape") throws -> [Int] {
        guard (1...Int(LK_MAX_RANK)).contains(rank) else {
            throw CAPIError(status: lk_status(LK_ERROR_SHAPE),
                            description: "the rank of \(what) must be 1 to \(LK_MAX_RANK), got \(UInt(bitPattern: rank))")
        }
        guard let shape else { throw CAPIError.invalidArgument("\(what) is NULL") }
        let dims = (0..<rank).map { Int(shape[$0]) }
        if let bad = dims.firstIndex(where: { $0 < 0 }) {
            throw CAPIError(status: lk_status(LK_ERROR_SHAPE),
                            description: "\(what)[\(bad)] is \(dims[bad]): a dimension cannot be negative")
        }
        _ = try Tensor.elementCount(of: dims)
        return dims
    }

    /// The float32 tensor behind `pointer`, naming it `what` in errors; one
    /// of another type is LK_ERROR_TYPE, `takes` saying what the call takes.
    static func tensor(_ pointer: OpaquePointer?, _ what: String = "the tensor",
                       takes: String = "this call takes float32 tensors") throws -> Tensor {
        switch try anyTensor(pointer, what) {
        case .float32(let tensor): return tensor
        case .typed(let value):
            throw CAPIError(status: lk_status(LK_ERROR_TYPE),
                            description: "\(what) is \(value.elementType), not float32: \(takes) (nothing is converted)")
        }
    }

    /// Throws unless `tensor` has an element: layers and parity run
    /// LayerKit's own kernels on them, which take no zero-size tensors
    /// (models take them wherever their ops do).
    static func requireElements(_ tensor: Tensor, _ what: String) throws {
        guard tensor.count > 0 else {
            throw CAPIError(status: lk_status(LK_ERROR_SHAPE),
                            description: "\(what) has shape \(Tensor.describe(tensor.shape)), no elements: layers take "
                                + "tensors of at least one element (models take zero-size inputs where ONNX does)")
        }
    }

    /// A caller's data pointer for `count` elements: NULL only when there are none.
    static func requireData<T>(_ data: T?, count: Int) throws {
        guard data != nil || count == 0 else { throw CAPIError.invalidArgument("data is NULL") }
    }

    /// The tensor behind `pointer`, of any element type.
    static func anyTensor(_ pointer: OpaquePointer?, _ what: String = "the tensor") throws -> AnyTensor {
        if let typed = try? Handle.object(pointer, as: TypedTensorHandle.self, what) { return .typed(typed.value) }
        return .float32(try Handle.object(pointer, as: Tensor.self, what))
    }

    /// The bits an element of a type under a byte has (bool's 1), nil for
    /// the types of whole bytes.
    static func bitsUnderAByte(_ type: ElementType) -> Int? {
        switch type {
        case .bool: 1
        case .uint2, .int2: 2
        case .uint4, .int4, .float4e2m1: 4
        case .float6e2m3, .float6e3m2: 6
        default: nil
        }
    }

    /// The element type of an API code, or an error naming the code.
    static func elementType(_ code: lk_element_type) throws -> ElementType {
        guard let type = ElementType(rawValue: Int(code)) else {
            throw CAPIError.invalidArgument("element type \(code) is not an lk_element_type (ONNX codes 1 to "
                                            + "\(ElementType.allCases.count))")
        }
        return type
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
public func lk_element_type_size(_ type: lk_element_type) -> Int {
    ElementType(rawValue: Int(type))?.byteWidth ?? 0
}

@c @implementation
public func lk_tensor_create_typed(_ context: OpaquePointer?, _ type: lk_element_type, _ shape: UnsafePointer<Int64>?,
                                   _ rank: Int, _ data: UnsafeRawPointer?, _ byteCount: Int,
                                   _ out: UnsafeMutablePointer<OpaquePointer?>?) -> lk_status {
    out?.pointee = nil
    return withContext(context) { _ in
        guard out != nil else { throw CAPIError.invalidArgument("out is NULL") }
        let type = try TensorArguments.elementType(type)
        guard let width = type.byteWidth else {
            throw CAPIError(status: lk_status(LK_ERROR_UNSUPPORTED),
                            description: "a string tensor is made by lk_tensor_create_strings")
        }
        let dims = try TensorArguments.shape(shape, rank: rank)
        let count = try Tensor.elementCount(of: dims)
        let (bytes, overflow) = count.multipliedReportingOverflow(by: width)
        // As Tensor(shape:) refuses a float32 tensor past this machine's memory: an error, not a failed allocation's trap.
        let memory = ProcessInfo.processInfo.physicalMemory
        guard !overflow else {
            throw CAPIError(status: lk_status(LK_ERROR_SHAPE),
                            description: "a \(type) tensor of shape \(Tensor.describe(dims)) has too many bytes")
        }
        guard UInt64(bytes) <= memory else {
            throw CAPIError(status: lk_status(LK_ERROR_SHAPE),
                            description: "a \(type) tensor of shape \(Tensor.describe(dims)) needs "
                                + "\((UInt64(bytes) + (1 << 20) - 1) >> 20) MiB, more than this machine's "
                                + "\(memory >> 20) MiB of memory")
        }
        // A size_t past Int.max arrives negative: it matches no size, and is printed as the caller passed it.
        let given = UInt(bitPattern: byteCount)
        guard let data else {
            guard given == 0 else { throw CAPIError.invalidArgument("data is NULL but byte_count is \(given)") }
            if type == .float32 { return try Handle.store(Tensor(shape: dims), in: out) }
            return try Handle.store(TypedTensorHandle(TypedTensor(elementType: type, shape: dims,
                                                                  bytes: [UInt8](repeating: 0, count: bytes))), in: out)
        }
        guard byteCount == bytes else {
            throw CAPIError(status: lk_status(LK_ERROR_SHAPE),
                            description: "byte_count is \(given) but a \(type) tensor of shape \(Tensor.describe(dims)) "
                                + "takes \(bytes) bytes (\(count) elements of \(width) bytes)")
        }
        if type == .float32 {
            let tensor = try Tensor(shape: dims)
            UnsafeMutableRawPointer(tensor.dataPointer).copyMemory(from: data, byteCount: bytes)
            return try Handle.store(tensor, in: out)
        }
        let values = [UInt8](UnsafeRawBufferPointer(start: data, count: bytes))
        // Bools and the types under a byte: one byte an element, their bits only.
        if let bits = TensorArguments.bitsUnderAByte(type) {
            if let bad = values.firstIndex(where: { $0 >> UInt8(bits) != 0 }) {
                let what = type == .bool ? "bools are bytes 0 or 1" : "a \(type) element takes the low \(bits) bits of its byte, the others 0"
                throw CAPIError.invalidArgument("element \(bad) of the \(type) data is byte \(values[bad]): \(what)")
            }
        }
        try Handle.store(TypedTensorHandle(TypedTensor(elementType: type, shape: dims, bytes: values)), in: out)
    }
}

@c @implementation
public func lk_tensor_destroy(_ tensor: OpaquePointer?) { Handle.release(tensor) }

@c @implementation
public func lk_tensor_element_type(_ context: OpaquePointer?, _ tensor: OpaquePointer?,
                                   _ type: UnsafeMutablePointer<lk_element_type>?) -> lk_status {
    withContext(context) { _ in
        let tensor = try TensorArguments.anyTensor(tensor)
        guard let type else { throw CAPIError.invalidArgument("type is NULL") }
        type.pointee = lk_element_type(tensor.elementType.rawValue)
    }
}

@c @implementation
public func lk_tensor_read_bytes(_ context: OpaquePointer?, _ tensor: OpaquePointer?, _ data: UnsafeMutableRawPointer?,
                                 _ byteCount: Int) -> lk_status {
    withContext(context) { _ in
        let tensor = try TensorArguments.anyTensor(tensor)
        try TensorArguments.requireData(data, count: tensor.count)
        guard let width = tensor.elementType.byteWidth else {
            throw CAPIError(status: lk_status(LK_ERROR_UNSUPPORTED),
                            description: "the tensor holds strings: read them with lk_tensor_read_string")
        }
        let bytes = tensor.count * width
        guard byteCount == bytes else {
            let status = byteCount < bytes && byteCount >= 0 ? LK_ERROR_BUFFER_TOO_SMALL : LK_ERROR_SHAPE
            throw CAPIError(status: lk_status(status),
                            description: "byte_count is \(UInt(bitPattern: byteCount)) but the \(tensor.elementType) "
                                + "tensor of shape \(Tensor.describe(tensor.shape)) has \(bytes) bytes "
                                + "(\(tensor.count) elements of \(width) bytes)")
        }
        guard let data, bytes > 0 else { return }  // a zero-size tensor: nothing to copy
        switch tensor {
        case .float32(let tensor): data.copyMemory(from: tensor.dataPointer, byteCount: bytes)
        case .typed(let value): value.bytes.withUnsafeBytes { data.copyMemory(from: $0.baseAddress!, byteCount: bytes) }
        }
    }
}

@c @implementation
public func lk_tensor_shape(_ context: OpaquePointer?, _ tensor: OpaquePointer?, _ shape: UnsafeMutablePointer<Int64>?,
                            _ capacity: Int, _ rank: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { _ in
        let tensor = try TensorArguments.anyTensor(tensor)
        try writeShape(tensor.shape.map(Int64.init), to: shape, capacity: capacity, rank: rank)
    }
}

@c @implementation
public func lk_tensor_element_count(_ context: OpaquePointer?, _ tensor: OpaquePointer?,
                                    _ count: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { _ in
        let tensor = try TensorArguments.anyTensor(tensor)
        guard let count else { throw CAPIError.invalidArgument("count is NULL") }
        count.pointee = tensor.count
    }
}

@c @implementation
public func lk_tensor_read(_ context: OpaquePointer?, _ tensor: OpaquePointer?, _ data: UnsafeMutablePointer<Float>?,
                           _ count: Int) -> lk_status {
    withContext(context) { _ in
        let tensor = try TensorArguments.tensor(
            tensor, takes: "lk_tensor_read reads float32 tensors, lk_tensor_read_bytes those of any type")
        try TensorArguments.requireData(data, count: tensor.count)
        try TensorArguments.requireElementCount(count, of: tensor, buffer: "data")
        data?.update(from: tensor.dataPointer, count: tensor.count)
    }
}

@c @implementation
public func lk_tensor_write(_ context: OpaquePointer?, _ tensor: OpaquePointer?, _ data: UnsafePointer<Float>?,
                            _ count: Int) -> lk_status {
    withContext(context) { _ in
        let tensor = try TensorArguments.tensor(tensor, takes: "lk_tensor_write writes float32 tensors only")
        try TensorArguments.requireData(data, count: tensor.count)
        try TensorArguments.requireElementCount(count, of: tensor, buffer: "data")
        if let data { tensor.dataPointer.update(from: data, count: tensor.count) }
    }
}
