import LayerKitCore
import Foundation

/// The MIL program of a Core ML ML Program (coremltools' `MIL.proto`), as
/// far as LayerKit runs it: the `main` function's inputs and the block of
/// the opset it names, its operations in order (MIL's order is topological).
struct MILFunction: Sendable {
    /// The function's inputs: name and tensor type.
    var inputs: [MILNamedType]
    /// The opset the function names ("CoreML5" for iOS 15), whose block specialization runs.
    var opset: String
    /// The block's outputs, by value name.
    var outputs: [String]
    /// The block's operations.
    var operations: [MILOperation]
}

/// A MIL data type (`MIL.proto`'s `DataType`), by its enum value.
struct MILDataType: Sendable, Equatable, CustomStringConvertible {
    var rawValue: Int

    static let bool = MILDataType(rawValue: 1), float16 = MILDataType(rawValue: 10)
    static let float32 = MILDataType(rawValue: 11), int8 = MILDataType(rawValue: 21)
    static let int32 = MILDataType(rawValue: 23), int64 = MILDataType(rawValue: 24)
    static let uint8 = MILDataType(rawValue: 31)

    private static let names = [0: "unused", 1: "bool", 2: "string", 10: "fp16", 11: "fp32", 12: "fp64", 13: "bf16",
                                21: "int8", 22: "int16", 23: "int32", 24: "int64", 25: "int4", 31: "uint8",
                                32: "uint16", 33: "uint32", 34: "uint64", 35: "uint4", 36: "uint2", 37: "uint1",
                                38: "uint6", 39: "uint3", 40: "fp8e4m3fn", 41: "fp8e5m2"]

    /// MIL's name of the type ("fp16"), as coremltools' `cast` dtype spells it.
    var description: String { Self.names[rawValue] ?? "data type \(rawValue)" }

    /// Whether values of the type are floats (fp16, fp32, fp64, bf16): LayerKit computes them all in float32.
    var isFloat: Bool { [10, 11, 12, 13].contains(rawValue) }
}

/// A tensor type: element type and dimensions (nil where unknown).
struct MILTensorType: Sendable {
    var dataType: MILDataType
    var dims: [Int?]

    /// The number of elements, when every dimension is known and the product fits.
    var count: Int? {
        dims.reduce(Optional(1)) { total, dim in
            guard let total, let dim, dim >= 0 else { return nil }
            let (product, overflow) = total.multipliedReportingOverflow(by: dim)
            return overflow ? nil : product
        }
    }
}

/// A named value and its type: a function input or an operation output.
struct MILNamedType: Sendable {
    var name: String
    var type: MILTensorType
}

/// A MIL value: its type and either immediate contents or a place in a weights file.
struct MILValue: Sendable {
    enum Contents: Sendable {
        case immediate(MILTensorData)
        /// `BlobFileValue`: a file name (`@model_path/weights/weight.bin`) and the offset of the record's metadata.
        case blob(file: String, offset: UInt64)
    }
    var type: MILTensorType
    var contents: Contents
}

/// A tensor's elements as `TensorValue` holds them.
enum MILTensorData: Sendable {
    case floats([Float])
    case doubles([Double])
    case ints([Int64])
    case bools([Bool])
    case strings([String])
    /// Raw little-endian elements (fp16, int8, uint8 immediate values).
    case bytes([UInt8])
}

/// One argument of an operation's input: a value's name or an immediate value.
enum MILArgument: Sendable {
    case name(String)
    case value(MILValue)
}

/// One `Operation`: type, inputs by parameter name, outputs, attributes
/// (a `const`'s `val`), and how many nested blocks it has (control flow).
struct MILOperation: Sendable {
    var type = ""
    var inputs: [String: [MILArgument]] = [:]
    var outputs: [MILNamedType] = []
    var attributes: [String: MILValue] = [:]
    var blockCount = 0

    /// How errors name it: "op 'conv1' (conv)", named by its first output.
    var label: String { "op '\(outputs.first?.name ?? "")' (\(type))" }
}
