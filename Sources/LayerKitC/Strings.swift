import CLayerKitAPI

/// Writes `text` to a caller's (buffer, capacity, length) as the header's
/// conventions say: at most capacity - 1 bytes and a NUL (cut at a UTF-8
/// character boundary), the full byte length to `length`, and
/// `LK_ERROR_BUFFER_TOO_SMALL` when it was cut.
func writeString(_ text: String, to buffer: UnsafeMutablePointer<CChar>?, capacity: Int,
                 length: UnsafeMutablePointer<Int>?) throws {
    let bytes = Array(text.utf8)
    length?.pointee = bytes.count
    guard let buffer, capacity > 0 else {
        if bytes.isEmpty && length != nil { return }
        throw CAPIError(status: lk_status(LK_ERROR_BUFFER_TOO_SMALL),
                        description: "a buffer of \(bytes.count + 1) bytes is needed, got \(capacity)")
    }
    var count = min(bytes.count, capacity - 1)
    // Never end inside a multi-byte character: back off over continuation bytes.
    while count < bytes.count, count > 0, bytes[count] & 0xC0 == 0x80 { count -= 1 }
    bytes.withUnsafeBufferPointer { source in
        buffer.withMemoryRebound(to: UInt8.self, capacity: count + 1) { target in
            if count > 0 { target.update(from: source.baseAddress!, count: count) }
            target[count] = 0
        }
    }
    if count < bytes.count {
        throw CAPIError(status: lk_status(LK_ERROR_BUFFER_TOO_SMALL),
                        description: "a buffer of \(bytes.count + 1) bytes is needed, got \(capacity)")
    }
}

/// A C string argument, or an error naming it when it is NULL or not UTF-8.
func requireString(_ pointer: UnsafePointer<CChar>?, _ what: String) throws -> String {
    guard let pointer else { throw CAPIError.invalidArgument("\(what) is NULL") }
    guard let text = String(validatingCString: pointer) else {
        throw CAPIError.invalidArgument("\(what) is not valid UTF-8")
    }
    return text
}
