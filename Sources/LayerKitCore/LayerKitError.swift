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
    public func prefixed(_ prefix: String) -> LayerKitError { withMessage { prefix + $0 } }

    /// The same kind of error with `suffix` after its message: a front end
    /// adds how its users act on it (the command line's `--layer`).
    public func suffixed(_ suffix: String) -> LayerKitError { withMessage { $0 + suffix } }

    /// The same kind of error with its message rewritten by `rewrite`.
    private func withMessage(_ rewrite: (String) -> String) -> LayerKitError {
        switch self {
        case .shapeMismatch(let m): .shapeMismatch(rewrite(m))
        case .invalidParameter(let m): .invalidParameter(rewrite(m))
        case .invalidWeights(let m): .invalidWeights(rewrite(m))
        case .file(let m): .file(rewrite(m))
        case .unsupported(let m): .unsupported(rewrite(m))
        case .gpuUnavailable(let m): .gpuUnavailable(rewrite(m))
        case .unknownOp(let m): .unknownOp(rewrite(m))
        case .invalidModel(let m): .invalidModel(rewrite(m))
        }
    }
}
