import LayerKitCore
import Foundation
/// An ONNX element type (`TensorProto.DataType`), by its code.
public struct ONNXDataType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The ONNX code (1 = FLOAT, 7 = INT64, 10 = FLOAT16, ...).
    public let rawValue: Int

    /// The type with ONNX code `rawValue`; every code is representable.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// 32-bit IEEE float.
    public static let float = ONNXDataType(rawValue: 1)
    /// 32-bit signed integer.
    public static let int32 = ONNXDataType(rawValue: 6)
    /// 64-bit signed integer.
    public static let int64 = ONNXDataType(rawValue: 7)
    /// 8-bit unsigned integer.
    public static let uint8 = ONNXDataType(rawValue: 2)
    /// 8-bit signed integer.
    public static let int8 = ONNXDataType(rawValue: 3)
    /// 16-bit unsigned integer.
    public static let uint16 = ONNXDataType(rawValue: 4)
    /// 16-bit signed integer.
    public static let int16 = ONNXDataType(rawValue: 5)
    /// Boolean, one byte per element.
    public static let bool = ONNXDataType(rawValue: 9)
    /// 16-bit IEEE half float.
    public static let float16 = ONNXDataType(rawValue: 10)
    /// 64-bit IEEE double.
    public static let double = ONNXDataType(rawValue: 11)

    private static let names = [
        "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING", "BOOL",
        "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
        "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1", "FLOAT8E8M0",
        "UINT2", "INT2", "FLOAT6E2M3", "FLOAT6E3M2",
    ]

    /// Whether values of this type are real floating point (FLOAT, FLOAT16,
    /// DOUBLE, BFLOAT16 and the float8/6/4 formats); the others are
    /// integers, BOOL, strings and complex numbers.
    public var isFloatingPoint: Bool { ElementType(rawValue: rawValue)?.isFloatingPoint ?? false }

    /// The ONNX name ("FLOAT16"), or "data type N" for codes ONNX does not define.
    public var description: String {
        Self.names.indices.contains(rawValue) ? Self.names[rawValue] : "data type \(rawValue)"
    }
}

/// A constant tensor of an ONNX file (an initializer or a tensor attribute).
///
/// The values stay as stored (`raw_data` or a typed field) until read with
/// `floats()` or `int64s()`, which check the count against `dims`.
public struct ONNXTensor: Sendable, Hashable {
    /// The tensor's name (initializers are referenced by it; may be empty for attributes).
    public var name: String
    /// The dimensions; empty for a scalar.
    public var dims: [Int]
    /// The element type.
    public var dataType: ONNXDataType

    /// The little-endian bytes of `raw_data`, when the file uses it.
    var rawData: [UInt8]?
    var floatData: [Float] = []
    var int32Data: [Int32] = []
    var int64Data: [Int64] = []
    var doubleData: [Double] = []
    var uint64Data: [UInt64] = []
    var stringData: [[UInt8]] = []

    /// Where the data is when the file keeps it outside (`data_location`
    /// EXTERNAL): a file beside the model, a byte offset, a length.
    struct ExternalData: Sendable, Hashable {
        let location: String
        let offset: Int
        let length: Int?
    }
    var externalData: ExternalData?
    /// The sequence or optional this value is (`TypedTensor.container`),
    /// carried whole; nil for a tensor, whose data is in the fields above.
    var containerValue: TypedTensor?

    /// Whether the value is a sequence, optional or map rather than a tensor.
    public var isContainer: Bool { containerValue != nil }

    /// Hashes what tells tensors apart cheaply: name, type, dims, the size of
    /// each storage and the bytes of the first elements. Equal tensors hash
    /// alike (`==` still compares every element); hashing every byte made a
    /// lookup keyed by a model's weights (`ConvertedNodeCache`) cost as much
    /// as converting them.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(dims)
        hasher.combine(dataType)
        hasher.combine(externalData)
        hasher.combine(rawData?.count)
        rawData?.prefix(64).withUnsafeBytes { hasher.combine(bytes: $0) }
        for count in [floatData.count, int32Data.count, int64Data.count, doubleData.count, uint64Data.count,
                      stringData.count] {
            hasher.combine(count)
        }
        // Not float_data's bits: `==` holds 0.0 and -0.0 equal.
        int64Data.prefix(16).withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// Whether the data is in an external file not read yet.
    public var hasExternalData: Bool { externalData != nil }

    /// The external data file's location, relative to the model's folder,
    /// while the data is still there (nil once read or for inline data).
    public var externalDataLocation: String? { externalData?.location }

    /// The number of elements `dims` describe (1 for a scalar).
    public func elementCount() throws -> Int {
        try dims.reduce(1) { count, dim in
            let (product, overflow) = count.multipliedReportingOverflow(by: dim)
            guard dim >= 0, !overflow else { throw failure("dims \(dims) do not give an element count") }
            return product
        }
    }

    /// The values as Floats, from FLOAT, FLOAT16 (converted exactly) or
    /// DOUBLE (rounded to nearest) data, in row-major order.
    public func floats() throws -> [Float] {
        switch dataType {
        case .float:
            // One copy, not a load per element (GPT-2 small's 0.5 GB of weights).
            if let raw = try rawFloat32() {
                return [Float](unsafeUninitializedCapacity: raw.count) { buffer, initialized in
                    raw.copy(into: buffer)
                    initialized = raw.count
                }
            }
            return try values(typed: floatData) { Float(bitPattern: $0) }
        case .float16:
            // Typed FLOAT16 data is stored in int32_data, one value per element, in the low 16 bits.
            let halves = try values(typed: int32Data.map { UInt16(truncatingIfNeeded: $0) }) { $0 as UInt16 }
            return halves.map { Float(halfBits: $0) }
        case .double:
            return try values(typed: doubleData) { Double(bitPattern: $0) }.map { Float($0) }
        default:
            throw failure("has type \(dataType); a FLOAT, FLOAT16 or DOUBLE tensor was expected")
        }
    }

    /// The values as Ints, from any integer or BOOL data up to 64 bits
    /// (UINT32/UINT64 excepted), in row-major order.
    public func int64s() throws -> [Int] {
        switch dataType {
        case .int64:
            return try values(typed: int64Data) { Int64(bitPattern: $0) }.map { Int($0) }
        case .int32:
            return try values(typed: int32Data) { Int32(bitPattern: $0) }.map { Int($0) }
        // Narrow integer and BOOL typed data live in int32_data, one value per element.
        case .int8, .int16:
            return try dataType == .int8 ? values(typed: int32Data) { (raw: UInt8) in Int32(Int8(bitPattern: raw)) }.map { Int($0) }
                : values(typed: int32Data) { (raw: UInt16) in Int32(Int16(bitPattern: raw)) }.map { Int($0) }
        case .uint8, .bool:
            return try values(typed: int32Data) { (raw: UInt8) in Int32(raw) }.map { Int($0) }
        case .uint16:
            return try values(typed: int32Data) { (raw: UInt16) in Int32(raw) }.map { Int($0) }
        default:
            throw failure("has type \(dataType); an integer or BOOL tensor was expected")
        }
    }

    /// The elements from `raw_data` (little-endian words of type `Word`,
    /// converted by `fromRaw`) or else from the typed field, checked
    /// against the count `dims` give.
    private func values<T, Word: FixedWidthInteger>(typed: [T], fromRaw: (Word) -> T) throws -> [T] {
        let count = try elementCount()
        guard let raw = rawData else {
            guard typed.count == count else {
                throw failure("holds \(typed.count) values where dims \(dims) need \(count)")
            }
            return typed
        }
        let rawSize = MemoryLayout<Word>.size
        _ = try rawCount(raw, wordSize: rawSize)
        return raw.withUnsafeBytes { buffer in
            (0..<count).map { fromRaw(Word(littleEndian: buffer.loadUnaligned(fromByteOffset: $0 * rawSize, as: Word.self))) }
        }
    }

    /// A FLOAT tensor's values as a `Tensor` of its dims: raw data copied
    /// once into the tensor's storage, typed data through `floats()`.
    public func floatTensor() throws -> Tensor {
        guard let raw = try rawFloat32() else { return try Tensor(shape: dims, values: floats()) }
        return try Tensor(shape: dims) { raw.copy(into: $0) }
    }

    /// Raw little-endian float32 words on a little-endian host, which are
    /// its floats as they lie: copied whole, not loaded one by one.
    private struct RawFloat32 {
        let bytes: [UInt8]
        let count: Int

        func copy(into elements: UnsafeMutableBufferPointer<Float>) {
            bytes.withUnsafeBytes { source in
                if count > 0 { UnsafeMutableRawBufferPointer(elements).copyMemory(from: source) }
            }
        }
    }

    /// This FLOAT tensor's raw data as `RawFloat32`, checked against its
    /// dims; nil when it has none or the host is big-endian.
    private func rawFloat32() throws -> RawFloat32? {
        guard dataType == .float, let raw = rawData, UInt32(1).littleEndian == 1 else { return nil }
        return RawFloat32(bytes: raw, count: try rawCount(raw, wordSize: 4))
    }

    /// The element count `dims` give, checked against `raw`'s bytes at `wordSize` bytes an element.
    private func rawCount(_ raw: [UInt8], wordSize: Int) throws -> Int {
        let count = try elementCount()
        let (bytes, overflow) = count.multipliedReportingOverflow(by: wordSize)
        guard !overflow, raw.count == bytes else {
            throw failure("raw_data holds \(raw.count) bytes where dims \(dims) of \(dataType) need \(count) x \(wordSize)")
        }
        return count
    }

    func failure(_ text: String) -> LayerKitError {
        .invalidModel("tensor '\(name)' \(text)")
    }
}

extension ONNXTensor {
    /// A FLOAT tensor holding `floats` (row-major), as constant folding
    /// and tests make them.
    public init(name: String, dims: [Int], floats: [Float]) {
        self.init(name: name, dims: dims, dataType: .float)
        floatData = floats
    }

    /// An INT64 tensor holding `int64s` (row-major): shapes, indices, axes.
    public init(name: String, dims: [Int], int64s: [Int64]) {
        self.init(name: name, dims: dims, dataType: .int64)
        int64Data = int64s
    }

    /// Decodes a serialized `TensorProto` (the `input_0.pb` files of the
    /// onnx package's backend tests); `source` names it in errors.
    public init(protobuf data: [UInt8], source: String) throws {
        var reader = ProtobufReader(bytes: data, message: "TensorProto", source: source)
        try self.init(decoding: &reader)
    }

    /// The bytes its elements take (0 for types of no fixed width):
    /// what `inspect` reports as a model's weight size.
    public var byteCount: Int {
        guard let width = elementBytes, let count = try? elementCount() else { return 0 }
        return count * width
    }

    /// Bytes per element of the fixed-width types external data may hold.
    private var elementBytes: Int? {
        switch dataType {
        case .float, .int32: return 4
        case .int64, .double: return 8
        case .float16, .int16, .uint16: return 2
        case .int8, .uint8, .bool: return 1
        default: return nil
        }
    }

    /// Where the external data is, as a range to read once however many
    /// tensors share it.
    struct ExternalRange: Hashable {
        let location: String
        let offset: Int
        let length: Int
    }

    /// The external data's byte range, checked: its length against the
    /// dims, its end against `fileSize`, the size of the file it is in.
    func externalRange(fileSize: Int) throws -> ExternalRange? {
        guard let external = externalData else { return nil }
        guard let width = elementBytes else {
            throw LayerKitError.invalidModel("tensor '\(name)' of type \(dataType) cannot be read from external data")
        }
        let (bytes, overflow) = try elementCount().multipliedReportingOverflow(by: width)
        guard !overflow, external.length.map({ $0 == bytes }) ?? true else {
            throw LayerKitError.invalidModel("tensor '\(name)': external data length \(external.length ?? -1) does not "
                                             + "match dims \(dims) of \(dataType) (\(bytes) bytes)")
        }
        let (end, past) = external.offset.addingReportingOverflow(bytes)
        guard !past, end <= fileSize else {
            throw LayerKitError.invalidModel("tensor '\(name)': external data '\(external.location)' holds \(fileSize) "
                                             + "bytes, fewer than offset \(external.offset) + \(bytes)")
        }
        return ExternalRange(location: external.location, offset: external.offset, length: bytes)
    }

    /// Reads `range` from the open file `descriptor`; `tensor` names the
    /// tensor in the error for a file that ends early.
    static func read(_ range: ExternalRange, from descriptor: Int32, tensor: String) throws -> [UInt8] {
        var data = [UInt8](repeating: 0, count: range.length)
        var done = 0
        while done < range.length {
            let n = data.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress! + done, range.length - done, off_t(range.offset + done))
            }
            guard n > 0 else {
                throw LayerKitError.file("cannot read external data '\(range.location)' of tensor '\(tensor)'")
            }
            done += n
        }
        return data
    }

    /// Takes `bytes` (the external range's contents) as the tensor's data.
    mutating func setExternalBytes(_ bytes: [UInt8]) {
        rawData = bytes
        externalData = nil
    }
}

extension ElementType {
    /// ONNX's own name: "FLOAT", "FLOAT16", "INT64", ... (as
    /// `ONNXDataType` names it).
    public var onnxName: String { ONNXDataType(rawValue: rawValue).description }
}
