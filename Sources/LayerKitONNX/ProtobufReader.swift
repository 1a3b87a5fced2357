import LayerKitCore
/// A reader of the protobuf wire format over one message's bytes.
///
/// It knows wire types 0 (varint), 1 (64-bit), 2 (length-delimited) and
/// 5 (32-bit); groups (3, 4) and unknown wire types are refused. Every read
/// is checked against the end of the enclosing message, and every error is
/// a `LayerKitError.invalidModel` naming the source, the byte offset in the
/// whole input and what was being read ("NodeProto.input"). Sub-messages
/// nest at most `maxDepth` deep, so hostile nesting cannot exhaust the stack.
struct ProtobufReader {
    /// The wire types of protobuf encoding that carry values.
    enum WireType: UInt64 {
        case varint = 0, fixed64 = 1, lengthDelimited = 2, fixed32 = 5
    }

    /// One field's tag: its number, its wire type and where its tag starts.
    struct Field {
        let number: Int
        let wireType: WireType
        let offset: Int
    }

    /// How deep messages may nest inside each other.
    static let maxDepth = 64

    /// The message type being read, for error messages ("NodeProto").
    let message: String
    /// Names the input in error messages ("model.onnx").
    let source: String
    private let bytes: [UInt8]
    /// The byte read next, counted from the start of the whole input.
    private(set) var offset: Int
    private let end: Int
    private let depth: Int

    /// A reader over all of `bytes`, a message of type `message`.
    init(bytes: [UInt8], message: String, source: String) {
        self.init(bytes: bytes, range: 0..<bytes.count, message: message, source: source, depth: 0)
    }

    private init(bytes: [UInt8], range: Range<Int>, message: String, source: String, depth: Int) {
        self.bytes = bytes
        self.offset = range.lowerBound
        self.end = range.upperBound
        self.message = message
        self.source = source
        self.depth = depth
    }

    /// An `invalidModel` error: "source: text at byte N while reading Message.field".
    func error(_ text: String, at offset: Int, reading name: String? = nil) -> LayerKitError {
        let what = name.map { " while reading \(message).\($0)" } ?? " in \(message)"
        return .invalidModel("\(source): \(text) at byte \(offset)\(what)")
    }

    /// The next field's tag, or nil at the end of the message.
    mutating func nextField() throws -> Field? {
        guard offset < end else { return nil }
        let start = offset
        let tag = try readVarint("field tag")
        let number = tag >> 3
        guard number >= 1, number <= 0x1FFF_FFFF else {
            throw error("invalid field number \(number)", at: start, reading: "field tag")
        }
        guard let wireType = WireType(rawValue: tag & 7) else {
            let kind = tag & 7 == 3 || tag & 7 == 4 ? "group wire type" : "unknown wire type"
            throw error("\(kind) \(tag & 7) for field \(number)", at: start, reading: "field tag")
        }
        return Field(number: Int(number), wireType: wireType, offset: start)
    }

    /// Skips the value of a field this reader does not decode.
    mutating func skip(_ field: Field) throws {
        switch field.wireType {
        case .varint: _ = try readVarint("field \(field.number)")
        case .fixed64: _ = try take(8, "field \(field.number)")
        case .fixed32: _ = try take(4, "field \(field.number)")
        case .lengthDelimited: _ = try lengthDelimited("field \(field.number)")
        }
    }

    // MARK: Single values

    /// A varint field's value (int64, uint64, enum and bool fields).
    mutating func uint64(_ field: Field, _ name: String) throws -> UInt64 {
        try expect(field, .varint, name)
        return try readVarint(name)
    }

    /// An int64 field: the varint's bit pattern.
    mutating func int64(_ field: Field, _ name: String) throws -> Int64 {
        Int64(bitPattern: try uint64(field, name))
    }

    /// An int32 field: the varint's low 32 bits (as protobuf parsers do).
    mutating func int32(_ field: Field, _ name: String) throws -> Int32 {
        Int32(truncatingIfNeeded: try uint64(field, name))
    }

    /// A float field (fixed 32-bit, little-endian).
    mutating func float(_ field: Field, _ name: String) throws -> Float {
        try expect(field, .fixed32, name)
        return Float(bitPattern: UInt32(truncatingIfNeeded: try readFixed(4, name)))
    }

    /// A double field (fixed 64-bit, little-endian).
    mutating func double(_ field: Field, _ name: String) throws -> Double {
        try expect(field, .fixed64, name)
        return Double(bitPattern: try readFixed(8, name))
    }

    /// A bytes field's contents.
    mutating func bytes(_ field: Field, _ name: String) throws -> ArraySlice<UInt8> {
        try expect(field, .lengthDelimited, name)
        return bytes[try lengthDelimited(name)]
    }

    /// A string field; bytes that are not UTF-8 become U+FFFD.
    mutating func string(_ field: Field, _ name: String) throws -> String {
        String(decoding: try bytes(field, name), as: UTF8.self)
    }

    /// A reader over an embedded message of type `type`.
    mutating func message(_ field: Field, _ name: String, type: String) throws -> ProtobufReader {
        try expect(field, .lengthDelimited, name)
        guard depth < Self.maxDepth else {
            throw error("messages nested more than \(Self.maxDepth) deep", at: field.offset, reading: name)
        }
        let range = try lengthDelimited(name)
        return ProtobufReader(bytes: bytes, range: range, message: type, source: source, depth: depth + 1)
    }

    // MARK: Repeated scalars, packed or not

    /// Appends a repeated float field's values (packed or one per tag).
    mutating func appendFloats(_ field: Field, _ name: String, to values: inout [Float]) throws {
        try appendRepeated(field, name, element: .fixed32, to: &values) {
            Float(bitPattern: UInt32(truncatingIfNeeded: try $0.readFixed(4, name)))
        }
    }

    /// Appends a repeated double field's values (packed or one per tag).
    mutating func appendDoubles(_ field: Field, _ name: String, to values: inout [Double]) throws {
        try appendRepeated(field, name, element: .fixed64, to: &values) { Double(bitPattern: try $0.readFixed(8, name)) }
    }

    /// Appends a repeated int64 field's values (packed or one per tag).
    mutating func appendInt64s(_ field: Field, _ name: String, to values: inout [Int64]) throws {
        try appendRepeated(field, name, element: .varint, to: &values) { Int64(bitPattern: try $0.readVarint(name)) }
    }

    /// Appends a repeated int32 field's values (packed or one per tag), each
    /// the low 32 bits of its varint.
    mutating func appendInt32s(_ field: Field, _ name: String, to values: inout [Int32]) throws {
        try appendRepeated(field, name, element: .varint, to: &values) {
            Int32(truncatingIfNeeded: try $0.readVarint(name))
        }
    }

    /// A repeated scalar: packed (one length-delimited run of elements) or
    /// a single element of wire type `element`.
    private mutating func appendRepeated<T>(_ field: Field, _ name: String, element: WireType, to values: inout [T],
                                            read: (inout ProtobufReader) throws -> T) throws {
        guard field.wireType == .lengthDelimited else {
            try expect(field, element, name)
            values.append(try read(&self))
            return
        }
        let range = try lengthDelimited(name)
        var packed = ProtobufReader(bytes: bytes, range: range, message: message, source: source, depth: depth)
        // A lower bound on the count (a varint takes 1 to 10 bytes), so hostile lengths cannot over-reserve.
        values.reserveCapacity(values.count + range.count / (element == .fixed64 ? 8 : element == .fixed32 ? 4 : 10))
        while packed.offset < packed.end { values.append(try read(&packed)) }
    }

    // MARK: Raw reads

    private func expect(_ field: Field, _ wireType: WireType, _ name: String) throws {
        guard field.wireType == wireType else {
            throw error("wire type \(field.wireType.rawValue) where \(wireType.rawValue) was expected",
                        at: field.offset, reading: name)
        }
    }

    /// A varint of at most 10 bytes whose value fits in 64 bits.
    private mutating func readVarint(_ name: String) throws -> UInt64 {
        let start = offset
        var value: UInt64 = 0
        for index in 0..<9 {
            let byte = try readByte(name)
            value |= UInt64(byte & 0x7F) << (7 * UInt64(index))
            if byte < 0x80 { return value }
        }
        // The tenth byte holds bit 63 only, and must end the varint.
        let last = try readByte(name)
        guard last < 0x80 else { throw error("varint longer than 10 bytes", at: start, reading: name) }
        guard last <= 1 else { throw error("varint overflows 64 bits", at: start, reading: name) }
        return value | UInt64(last) << 63
    }

    private mutating func readByte(_ name: String) throws -> UInt8 {
        guard offset < end else { throw error("truncated", at: offset, reading: name) }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// `count` (4 or 8) little-endian bytes.
    private mutating func readFixed(_ count: Int, _ name: String) throws -> UInt64 {
        let range = try take(count, name)
        return range.reversed().reduce(0) { $0 << 8 | UInt64(bytes[$1]) }
    }

    /// A varint length, then that many bytes: their range.
    private mutating func lengthDelimited(_ name: String) throws -> Range<Int> {
        let start = offset
        let length = try readVarint(name)
        guard length <= UInt64(end - offset) else {
            throw error("length \(length) runs past the end (\(end - offset) bytes left)", at: start, reading: name)
        }
        return try take(Int(length), name)
    }

    /// The next `count` bytes' range.
    private mutating func take(_ count: Int, _ name: String) throws -> Range<Int> {
        guard count <= end - offset else { throw error("truncated", at: offset, reading: name) }
        defer { offset += count }
        return offset..<offset + count
    }
}
