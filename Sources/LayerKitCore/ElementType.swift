/// The element type of a tensor: ONNX's `TensorProto.DataType`, with ONNX's
/// code as the raw value (`init?(rawValue:)` is nil for 0, UNDEFINED, and
/// for codes newer than this list).
public enum ElementType: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case float32 = 1, uint8, int8, uint16, int16, int32, int64, string, bool, float16, float64
    case uint32, uint64, complex64, complex128, bfloat16
    case float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz
    case uint4, int4, float4e2m1, float8e8m0, uint2, int2, float6e2m3, float6e3m2

    /// Whether values of this type are integers or booleans (not floating point).
    public var isInteger: Bool { integerBits != nil }

    /// Whether values of this type are real floating-point numbers (the
    /// IEEE types, bfloat16 and the float8/6/4 formats).
    public var isFloatingPoint: Bool { !isInteger && self != .string && !isComplex }

    /// Whether values of this type are complex numbers.
    public var isComplex: Bool { self == .complex64 || self == .complex128 }

    /// Whether an integer type is signed (false for booleans, unsigned
    /// integers and non-integer types).
    public var isSigned: Bool { [.int8, .int16, .int32, .int64, .int4, .int2].contains(self) }

    /// The bit width of an integer type (1 for bool), nil for the others.
    public var integerBits: Int? {
        switch self {
        case .bool: 1
        case .uint2, .int2: 2
        case .uint4, .int4: 4
        case .uint8, .int8: 8
        case .uint16, .int16: 16
        case .uint32, .int32: 32
        case .uint64, .int64: 64
        default: nil
        }
    }

    /// Bytes per element in a `TypedTensor`'s storage (and in `.npy`): the
    /// types under a byte take one byte each there (ONNX's files pack them,
    /// two or four to a byte); nil for strings.
    public var byteWidth: Int? {
        switch self {
        case .string: nil
        case .float64, .int64, .uint64, .complex64: 8
        case .complex128: 16
        case .float32, .int32, .uint32: 4
        case .float16, .bfloat16, .int16, .uint16: 2
        default: 1
        }
    }

    /// The Swift-style name: "float32", "float16", "int64", ...
    public var description: String { Self.names[rawValue - 1] }

    /// The type of a Swift-style name (`description`), nil for others.
    public init?(name: String) {
        guard let index = Self.names.firstIndex(of: name) else { return nil }
        self.init(rawValue: index + 1)
    }

    /// The case names, in code order (code 1 first).
    private static let names = [
        "float32", "uint8", "int8", "uint16", "int16", "int32", "int64", "string", "bool", "float16", "float64",
        "uint32", "uint64", "complex64", "complex128", "bfloat16",
        "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
        "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2", "float6e2m3", "float6e3m2",
    ]
}
