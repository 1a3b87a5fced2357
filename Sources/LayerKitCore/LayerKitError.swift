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
}
