import Foundation
import LayerKit

/// Reading and writing tensors by file extension (`.npy`, `.png`, `.jpg`),
/// with the checks every command needs before it touches a file.
enum TensorFiles {
    static let readable = ["npy", "pb", "png", "jpg", "jpeg"]
    static let writable = ["npy", "pb", "png", "json"]
    /// The readable types, as error messages list them.
    static let readableText = ".npy, .pb, .png or .jpg"

    /// What a `.png` output holds.
    enum PNGForm {
        /// The tensor as a picture (1, 3 or 4 channels in 0...1): an
        /// image-to-image model's output (`Tensor.writeImagePNG`).
        case image
        /// Every channel a gray tile, min..max (`Tensor.writeActivationPNG`).
        case grid
    }

    /// Reads a `.npy`, `.png` or `.jpg`/`.jpeg` file as a tensor.
    static func read(_ path: String) throws -> Tensor {
        switch fileExtension(path) {
        case "npy": return try Tensor(npyFile: path)
        case "png": return try Tensor(pngFile: path)
        case "jpg", "jpeg": return try Tensor(jpegFile: path)
        default:
            throw UsageError("\(path): unknown input type (expected \(readableText))")
        }
    }

    /// Reads a `.npy` (any numpy dtype LayerKit reads) or `.pb` (an ONNX
    /// TensorProto of any element type) file in its own element type.
    static func readTyped(_ path: String) throws -> TypedTensor {
        switch fileExtension(path) {
        case "npy": return try TypedTensor(npyFile: path)
        case "pb": return try TypedTensor(tensorProto: RegularFile.bytes(path), source: "'\(path)'")
        default: return TypedTensor(try read(path))
        }
    }

    /// Writes an output of any element type as `.npy` (its numpy dtype) or
    /// `.pb` (an ONNX TensorProto named `name`); a float `.png` as `png` says.
    static func write(_ value: TypedTensor, name: String, to path: String, png: PNGForm) throws {
        switch fileExtension(path) {
        case "npy": try value.writeNPY(to: path)
        case "pb": try value.writeTensorProto(to: path, name: name)
        case "json": throw UsageError("\(path): output '\(name)' is a tensor; .json is for a sequence of maps (ZipMap's)")
        default: try write(try value.float32Tensor(), to: path, png: png)
        }
    }

    /// Whether `path` names a picture (PNG or JPEG), which is resized and
    /// normalized as a model's image input.
    static func isImage(_ path: String) -> Bool {
        ["png", "jpg", "jpeg"].contains(fileExtension(path))
    }

    /// Writes `tensor` as `.npy` (Float32) or `.png` (`png` says which picture).
    static func write(_ tensor: Tensor, to path: String, png: PNGForm) throws {
        switch fileExtension(path) {
        case "npy": try tensor.writeNPY(to: path)
        case "png" where png == .grid: try tensor.writeActivationPNG(to: path)
        case "png": try tensor.writeImagePNG(to: path)
        default:
            throw LayerKitError.unsupported("\(path): unknown output type (expected .npy or .png)")
        }
    }

    /// Throws unless `output` has a writable extension (`.png` alone for
    /// `grid`) and is none of the files the command reads (`ReadFiles`:
    /// overwriting one would destroy the user's file).
    static func checkOutput(_ output: String, notAmong inputs: ReadFiles, grid: Bool = false) throws {
        if grid {
            guard fileExtension(output) == "png" else {
                throw UsageError("\(output): --output-grid draws a .png picture")
            }
        } else if !writable.contains(fileExtension(output)) {
            throw UsageError("\(output): unknown output type (expected .npy, .pb, .png, or .json for a sequence of maps)")
        }
        try inputs.refuseOverwrite(of: output)
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
