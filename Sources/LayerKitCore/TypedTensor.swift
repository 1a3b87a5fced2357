import Foundation

/// A host tensor of any ONNX element type: its type, its shape, and its
/// elements as little-endian bytes in row-major order (one byte per element
/// for bool and the types under a byte; ONNX files pack those, `.npy` and
/// this storage do not), or strings for `.string`.
///
/// `Tensor` is the float32 tensor the layers compute on; a `TypedTensor` is
/// how a value of any other type enters and leaves a model (inputs,
/// outputs, `.npy` and TensorProto files) and how typed constants are
/// computed at load. Conversions follow ONNX `Cast`: floats round to
/// nearest even, floats to integers truncate toward zero, integers wrap to
/// their width as numpy's `astype` does, and anything non-zero is `true`.
public struct TypedTensor: Sendable, Hashable, CustomStringConvertible {
    public let elementType: ElementType
    /// The extent of each dimension, outermost first; empty for a scalar.
    public let shape: [Int]
    /// The number of elements, the product of `shape`.
    public let count: Int
    /// The elements' bytes (`count` times `elementType.byteWidth`); empty for strings.
    public let bytes: [UInt8]
    /// The elements of a `.string` tensor; empty for every other type.
    public let strings: [String]
    /// The sequence, optional or map this value is, when it is not a tensor
    /// (`TypedTensor+Container`); nil for a tensor.
    public internal(set) var container: Container?

    /// A tensor of `elementType` over `bytes`, which must hold exactly
    /// `shape`'s element count of that type's width.
    public init(elementType: ElementType, shape: [Int], bytes: [UInt8]) throws {
        let count = try Tensor.elementCount(of: shape)
        guard let width = elementType.byteWidth else {
            throw LayerKitError.unsupported("a \(elementType) tensor holds strings, not bytes")
        }
        guard bytes.count == count * width else {
            throw LayerKitError.shapeMismatch("\(bytes.count) bytes do not fill shape \(Tensor.describe(shape)) of "
                                              + "\(elementType) (\(count) x \(width) bytes)")
        }
        (self.elementType, self.shape, self.count, self.bytes, self.strings) = (elementType, shape, count, bytes, [])
    }

    /// A `.string` tensor holding `strings`.
    public init(shape: [Int], strings: [String]) throws {
        let count = try Tensor.elementCount(of: shape)
        guard strings.count == count else {
            throw LayerKitError.shapeMismatch("\(strings.count) strings do not fill shape \(Tensor.describe(shape))")
        }
        (elementType, self.shape, self.count, bytes, self.strings) = (.string, shape, count, [], strings)
    }

    /// The float32 tensor's values, as a `.float32` tensor (hosts are
    /// little-endian: the bytes are copied as they are).
    public init(_ tensor: Tensor) {
        let bytes = Array(UnsafeRawBufferPointer(UnsafeBufferPointer(start: tensor.dataPointer, count: tensor.count)))
        (elementType, shape, count, self.bytes, strings) = (.float32, tensor.shape, tensor.count, bytes, [])
    }

    /// A tensor of `elementType` and `shape` whose every element is zero
    /// (false, or the empty string).
    public init(zerosOf elementType: ElementType, shape: [Int]) throws {
        let count = try Tensor.elementCount(of: shape)
        guard let width = elementType.byteWidth else {
            try self.init(shape: shape, strings: Array(repeating: "", count: count))
            return
        }
        try self.init(elementType: elementType, shape: shape, bytes: [UInt8](repeating: 0, count: count * width))
    }

    /// A tensor of `elementType` holding `values` converted as ONNX `Cast`
    /// converts from a float (`saturate` for the float8 types).
    public init(_ elementType: ElementType, shape: [Int], doubles values: [Double], saturate: Bool = true) throws {
        try self.init(elementType, shape: shape, count: values.count) { TypedTensor.code(values[$0], as: elementType, saturate: saturate) }
    }

    /// A tensor of `elementType` holding `values` converted as ONNX `Cast`
    /// converts from an integer (wrapping to narrower integer types).
    public init(_ elementType: ElementType, shape: [Int], integers values: [Int64]) throws {
        try self.init(elementType, shape: shape, count: values.count) { i in
            elementType.isInteger ? UInt64(bitPattern: values[i]) : TypedTensor.code(Double(values[i]), as: elementType)
        }
    }

    /// A tensor of unsigned 64-bit `values` (ONNX's UINT64 data) as `elementType`.
    public init(_ elementType: ElementType, shape: [Int], unsignedIntegers values: [UInt64]) throws {
        try self.init(elementType, shape: shape, count: values.count) { i in
            elementType.isInteger ? values[i] : TypedTensor.code(Double(values[i]), as: elementType)
        }
    }

    /// Fills `count` elements from `code`, each element's bits in the low
    /// bits of a UInt64 (wrapped to the type's width here).
    private init(_ elementType: ElementType, shape: [Int], count given: Int, code: (Int) -> UInt64) throws {
        let count = try Tensor.elementCount(of: shape)
        guard given == count else {
            throw LayerKitError.shapeMismatch("\(given) values do not fill shape \(Tensor.describe(shape)) (\(count) elements)")
        }
        guard let width = elementType.byteWidth, !elementType.isComplex else {
            throw LayerKitError.unsupported("cannot make a \(elementType) tensor from numbers")
        }
        var bytes = [UInt8](repeating: 0, count: count * width)
        let bits = elementType == .bool ? nil : elementType.integerBits
        for i in 0..<count {
            var word = code(i)
            if elementType == .bool { word = word != 0 ? 1 : 0 }
            if let bits, bits < 8 { word &= (1 << UInt64(bits)) - 1 }
            for b in 0..<width { bytes[i * width + b] = UInt8(truncatingIfNeeded: word >> UInt64(8 * b)) }
        }
        try self.init(elementType: elementType, shape: shape, bytes: bytes)
    }

    /// Element `i`'s bits, zero-extended.
    private func word(_ i: Int) -> UInt64 {
        let width = elementType.byteWidth ?? 0
        var word: UInt64 = 0
        for b in 0..<width { word |= UInt64(bytes[i * width + b]) << UInt64(8 * b) }
        return word
    }

    /// Element `i` as a Double: exact for every type but 64-bit integers
    /// past 2^53 (rounded); booleans are 0 and 1. Strings are parsed (NaN
    /// when they are not numbers).
    public func double(at i: Int) -> Double {
        let w = word(i)
        switch elementType {
        case .float32: return Double(Float(bitPattern: UInt32(truncatingIfNeeded: w)))
        case .float16: return Double(Float(halfBits: UInt16(truncatingIfNeeded: w)))
        case .float64: return Double(bitPattern: w)
        case .string: return Double(strings[i].trimmingCharacters(in: .whitespaces)) ?? .nan
        case .uint64: return Double(w)
        default:
            if let format = Minifloat(elementType) { return format.decode(UInt32(truncatingIfNeeded: w)) }
            return Double(integer(at: i))
        }
    }

    /// Element `i` as an Int64: integers exactly (UINT64 as its bit
    /// pattern), booleans 0 and 1, floats truncated toward zero (NaN and
    /// values past Int64 become Int64.min, as x86's conversion does).
    public func integer(at i: Int) -> Int64 {
        guard let bits = elementType.integerBits else {
            let value = double(at: i).rounded(.towardZero)
            return value.isFinite && abs(value) < 0x1p63 ? Int64(value) : .min
        }
        let w = word(i)
        guard elementType.isSigned, bits < 64 else { return Int64(bitPattern: w) }
        // Sign-extend from the type's width.
        let shift = UInt64(64 - bits)
        return Int64(bitPattern: w << shift) >> Int64(shift)
    }

    /// Every element as a Double (`double(at:)`).
    public func doubles() -> [Double] { (0..<count).map(double(at:)) }

    /// Every element as an Int64 (`integer(at:)`).
    public func integers() -> [Int64] { (0..<count).map(integer(at:)) }

    /// The values as a float32 `Tensor` (converted as `double(at:)` reads them).
    public func float32Tensor() throws -> Tensor {
        let tensor = try Tensor(shape: shape)
        try write(into: tensor)
        return tensor
    }

    /// Writes the values, converted to float32 as `float32Tensor()` does,
    /// into `tensor`, which must hold as many elements.
    public func write(into tensor: Tensor) throws {
        guard tensor.count == count else {
            throw LayerKitError.shapeMismatch("\(count) values do not fill a tensor of shape \(Tensor.describe(tensor.shape))")
        }
        if elementType == .float32 {
            bytes.withUnsafeBytes { raw in
                if let base = raw.baseAddress { UnsafeMutableRawPointer(tensor.dataPointer).copyMemory(from: base, byteCount: raw.count) }
            }
            return
        }
        for i in 0..<count { tensor[i] = Float(double(at: i)) }
    }

    /// The values converted to `type` as ONNX `Cast` does (`saturate` for
    /// the float8 types). Strings are parsed as numbers and numbers printed
    /// as strings.
    public func converted(to type: ElementType, saturate: Bool = true) throws -> TypedTensor {
        // A sequence or optional keeps its elements' types: a container is never converted.
        if type == elementType || container != nil { return self }
        if type == .string {
            return try TypedTensor(shape: shape, strings: (0..<count).map { i in
                elementType.isInteger ? String(integer(at: i)) : TypedTensor.text(double(at: i))
            })
        }
        if elementType.isInteger {
            return elementType == .uint64
                ? try TypedTensor(type, shape: shape, unsignedIntegers: (0..<count).map { word($0) })
                : try TypedTensor(type, shape: shape, integers: integers())
        }
        // To bool: anything non-zero is true (0.5 and NaN too), as onnxruntime.
        if type == .bool { return try TypedTensor(.bool, shape: shape, integers: doubles().map { $0 != 0 ? 1 : 0 }) }
        if type.isInteger, elementType == .string {
            // Integer text is read exactly (through Double, 2^63 - 1 would round past Int64); other text as a float.
            return try TypedTensor(type, shape: shape, integers: strings.indices.map { i in
                let text = strings[i].trimmingCharacters(in: .whitespaces)
                return Int64(text) ?? UInt64(text).map { Int64(bitPattern: $0) } ?? integer(at: i)
            })
        }
        if type == .int4 || type == .uint4 {
            // onnxruntime rounds a float to the nearest 4-bit integer, halves away from zero, then wraps (NaN is 0).
            return try TypedTensor(type, shape: shape, integers: doubles().map { value in
                let rounded = value.rounded()
                return rounded.isNaN ? 0 : abs(rounded) < 0x1p63 ? Int64(rounded) : .min
            })
        }
        // Float to integer: truncated toward zero, then wrapped to the width.
        if type.isInteger { return try TypedTensor(type, shape: shape, integers: integers()) }
        return try TypedTensor(type, shape: shape, doubles: doubles(), saturate: saturate)
    }

    /// The bits of `value` as an element of `type` (a float type, or an
    /// integer type: truncated toward zero and wrapped).
    static func code(_ value: Double, as type: ElementType, saturate: Bool = true) -> UInt64 {
        switch type {
        case .float32: return UInt64(Float(value).bitPattern)
        case .float16: return UInt64(Float16(value).bitPattern)
        case .float64: return value.bitPattern
        case .bool: return value != 0 ? 1 : 0
        default:
            if let format = Minifloat(type) {
                // bfloat16 is not a float8 type: Cast's saturate does not apply to it.
                return UInt64(format.encode(value, saturate: saturate && type != .bfloat16))
            }
            let truncated = value.rounded(.towardZero)
            guard truncated.isFinite, abs(truncated) < 0x1p63 else { return UInt64(bitPattern: .min) }
            return UInt64(bitPattern: Int64(truncated))
        }
    }

    /// A float as onnxruntime's Cast to string prints it: C's "%.8g" for
    /// every float type ("-2", "0.1", "9.9999997e-06", "1.2345679e+08"),
    /// "NaN", "INF" and "-INF".
    private static func text(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-INF" : "INF" }
        return String(format: "%.8g", value)
    }

    /// `int64 [2, 3]`.
    public var description: String {
        container != nil ? form.description : "\(elementType) [\(shape.map(String.init).joined(separator: ", "))]"
    }
}
