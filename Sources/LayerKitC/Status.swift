import CLayerKitAPI
import LayerKit

/// The `lk_status` of a thrown error: LayerKit's own errors by kind, any
/// other (a Vulkan failure, a Foundation error) as `LK_ERROR_INTERNAL`.
func statusCode(of error: Error) -> lk_status {
    guard let error = error as? LayerKitError else {
        if let error = error as? CAPIError { return error.status }
        // A formula that does not parse is a bad argument, like a bad parameter.
        return error is FormulaParser.Error ? lk_status(LK_ERROR_INVALID_ARGUMENT) : lk_status(LK_ERROR_INTERNAL)
    }
    switch error {
    case .shapeMismatch: return lk_status(LK_ERROR_SHAPE)
    case .invalidParameter: return lk_status(LK_ERROR_INVALID_ARGUMENT)
    case .invalidWeights: return lk_status(LK_ERROR_WEIGHTS)
    case .file: return lk_status(LK_ERROR_FILE)
    case .unsupported: return lk_status(LK_ERROR_UNSUPPORTED)
    case .gpuUnavailable: return lk_status(LK_ERROR_GPU_UNAVAILABLE)
    case .unknownOp: return lk_status(LK_ERROR_UNKNOWN_OP)
    case .invalidModel: return lk_status(LK_ERROR_INVALID_MODEL)
    }
}

/// An error of the C boundary itself: a NULL handle, a buffer too small, a
/// callback's failure. Its status is stated, not derived.
struct CAPIError: Error, CustomStringConvertible {
    let status: lk_status
    let description: String

    static func invalidArgument(_ message: String) -> CAPIError {
        CAPIError(status: lk_status(LK_ERROR_INVALID_ARGUMENT), description: message)
    }
}

@c @implementation
public func lk_status_string(_ status: lk_status) -> UnsafePointer<CChar>? {
    StaticStrings.status(status)
}

/// Names of statuses and the version, in storage that lives as long as the
/// library: C callers keep these pointers. (`nonisolated(unsafe)`: written
/// once by the lazy initializer, then only read.)
enum StaticStrings {
    nonisolated(unsafe) private static let names: [UnsafePointer<CChar>] = [
        "LK_OK", "LK_ERROR_INVALID_ARGUMENT", "LK_ERROR_SHAPE", "LK_ERROR_WEIGHTS", "LK_ERROR_FILE",
        "LK_ERROR_UNSUPPORTED", "LK_ERROR_GPU_UNAVAILABLE", "LK_ERROR_UNKNOWN_OP", "LK_ERROR_INVALID_MODEL",
        "LK_ERROR_BUFFER_TOO_SMALL", "LK_ERROR_CALLBACK", "LK_ERROR_INTERNAL", "LK_ERROR_TYPE",
    ].map(permanent)
    nonisolated(unsafe) private static let unknown = permanent("LK_ERROR_UNKNOWN_STATUS")
    nonisolated(unsafe) static let version = permanent(LayerKitVersion.number)

    static func status(_ status: lk_status) -> UnsafePointer<CChar> {
        names.indices.contains(Int(status)) ? names[Int(status)] : unknown
    }

    /// A NUL-terminated copy of `text` that is never freed.
    static func permanent(_ text: String) -> UnsafePointer<CChar> {
        let bytes = Array(text.utf8CString)
        let copy = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
        copy.initialize(from: bytes, count: bytes.count)
        return UnsafePointer(copy)
    }
}
