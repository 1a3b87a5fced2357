import CLayerKitAPI
import LayerKit

// String tensors (LK_STRING): made from and read as NUL-terminated UTF-8,
// for models of tensor(string) inputs and outputs (a LabelEncoder, a
// classifier's string labels).

@c @implementation
public func lk_tensor_create_strings(_ context: OpaquePointer?, _ shape: UnsafePointer<Int64>?, _ rank: Int,
                                     _ strings: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int,
                                     _ out: UnsafeMutablePointer<OpaquePointer?>?) -> lk_status {
    out?.pointee = nil
    return withContext(context) { _ in
        guard out != nil else { throw CAPIError.invalidArgument("out is NULL") }
        let dims = try TensorArguments.shape(shape, rank: rank)
        let elements = try Tensor.elementCount(of: dims)
        guard count == elements else {
            throw CAPIError(status: lk_status(LK_ERROR_SHAPE),
                            description: "count is \(UInt(bitPattern: count)) but shape \(Tensor.describe(dims)) holds "
                                + "\(elements) strings")
        }
        guard elements == 0 || strings != nil else { throw CAPIError.invalidArgument("strings is NULL") }
        let values = try (0..<elements).map { i in try requireString(strings?[i], "string \(i)") }
        try Handle.store(TypedTensorHandle(TypedTensor(shape: dims, strings: values)), in: out)
    }
}

@c @implementation
public func lk_tensor_read_string(_ context: OpaquePointer?, _ tensor: OpaquePointer?, _ index: Int,
                                  _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int,
                                  _ length: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { _ in
        guard case .typed(let value) = try TensorArguments.anyTensor(tensor), value.elementType == .string else {
            throw CAPIError(status: lk_status(LK_ERROR_TYPE),
                            description: "the tensor does not hold strings (read it with lk_tensor_read_bytes)")
        }
        guard index >= 0, index < value.count else {
            throw CAPIError.invalidArgument("index \(UInt(bitPattern: index)) is past the tensor's \(value.count) strings")
        }
        try writeString(value.strings[index], to: buffer, capacity: capacity, length: length)
    }
}
