import Foundation
import LayerKit

/// Reading and writing tensors by file extension (`.npy`, `.png`), with the
/// checks every command needs before it touches a file.
enum TensorFiles {
    static let readable = ["npy", "png"]
    static let writable = ["npy", "png"]

    /// Reads a `.npy` or `.png` file as a tensor.
    static func read(_ path: String) throws -> Tensor {
        switch fileExtension(path) {
        case "npy": return try Tensor(npyFile: path)
        case "png": return try Tensor(pngFile: path)
        default:
            throw UsageError("\(path): unknown input type (expected .npy or .png)")
        }
    }

    /// Writes `tensor` as `.npy` (Float32) or `.png` (activation-map grid).
    static func write(_ tensor: Tensor, to path: String) throws {
        switch fileExtension(path) {
        case "npy": try tensor.writeNPY(to: path)
        case "png": try tensor.writeActivationPNG(to: path)
        default:
            throw LayerKitError.unsupported("\(path): unknown output type (expected .npy or .png)")
        }
    }

    /// Throws unless `output` has a writable extension and is none of
    /// `inputs` by identity (`FileIdentity`: overwriting it would destroy
    /// the user's file).
    static func checkOutput(_ output: String, notAmong inputs: [String]) throws {
        guard writable.contains(fileExtension(output)) else {
            throw UsageError("\(output): unknown output type (expected .npy or .png)")
        }
        try FileIdentity.refuseOverwrite(of: output, readingFrom: inputs)
    }

    /// Reads Float32 weights from a `.npy` file as little-endian bytes.
    static func weightData(_ path: String) throws -> Data {
        // Float32 in memory is little-endian on every platform LayerKit builds for.
        try Tensor(npyFile: path).values.withUnsafeBufferPointer { Data(buffer: $0) }
    }

    private static func fileExtension(_ path: String) -> String {
        URL(fileURLWithPath: path).pathExtension.lowercased()
    }
}
