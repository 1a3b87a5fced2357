/// Errors LayerKit throws for bad input or an unusable device. Each message
/// is one line a user can act on.
public enum LayerKitError: Error, CustomStringConvertible, Equatable {
    /// Shapes, element counts or ranks that do not fit together.
    case shapeMismatch(String)
    /// A parameter that is unknown, missing or out of range.
    case invalidParameter(String)
    /// Weight data of the wrong length or kind.
    case invalidWeights(String)
    /// A file that cannot be read, parsed or written.
    case file(String)
    /// A dtype or file feature LayerKit does not read.
    case unsupported(String)
    /// The GPU was asked for but cannot be used.
    case gpuUnavailable(String)
    /// An op name that no layer registers.
    case unknownOp(String)
    /// A model file that is malformed, truncated, or uses what LayerKit
    /// cannot run (the message names the node and op).
    case invalidModel(String)

    public var description: String {
        switch self {
        case .shapeMismatch(let m), .invalidParameter(let m), .invalidWeights(let m),
             .file(let m), .unsupported(let m), .gpuUnavailable(let m), .unknownOp(let m),
             .invalidModel(let m):
            return m
        }
    }

    /// The same kind of error with `prefix` before its message: a caller
    /// that knows where the error arose (a training step) says so.
    public func prefixed(_ prefix: String) -> LayerKitError {
        switch self {
        case .shapeMismatch(let m): .shapeMismatch(prefix + m)
        case .invalidParameter(let m): .invalidParameter(prefix + m)
        case .invalidWeights(let m): .invalidWeights(prefix + m)
        case .file(let m): .file(prefix + m)
        case .unsupported(let m): .unsupported(prefix + m)
        case .gpuUnavailable(let m): .gpuUnavailable(prefix + m)
        case .unknownOp(let m): .unknownOp(prefix + m)
        case .invalidModel(let m): .invalidModel(prefix + m)
        }
    }

    /// The same kind of error with `suffix` after its message: a front end
    /// adds how its users act on it (the command line's `--layer`).
    public func suffixed(_ suffix: String) -> LayerKitError {
        switch self {
        case .shapeMismatch(let m): .shapeMismatch(m + suffix)
        case .invalidParameter(let m): .invalidParameter(m + suffix)
        case .invalidWeights(let m): .invalidWeights(m + suffix)
        case .file(let m): .file(m + suffix)
        case .unsupported(let m): .unsupported(m + suffix)
        case .gpuUnavailable(let m): .gpuUnavailable(m + suffix)
        case .unknownOp(let m): .unknownOp(m + suffix)
        case .invalidModel(let m): .invalidModel(m + suffix)
        }
    }
}
