/// A writer of the protobuf wire format: the few field kinds LayerKit
/// writes (varints, length-delimited bytes, strings and messages) appended
/// to one byte array, the counterpart of `ProtobufReader`.
struct ProtobufWriter {
    /// The bytes written so far.
    private(set) var bytes: [UInt8] = []

    /// Appends `value` as a base-128 varint (1 to 10 bytes).
    mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// Appends field `number`'s tag with wire type `wireType`.
    mutating func tag(_ number: Int, _ wireType: ProtobufReader.WireType) {
        varint(UInt64(number) << 3 | wireType.rawValue)
    }

    /// Appends an int32, int64 or enum field; a negative value takes 10
    /// bytes (its two's complement), as protobuf writes it.
    mutating func int64(_ number: Int, _ value: Int64) {
        tag(number, .varint)
        varint(UInt64(bitPattern: value))
    }

    /// Appends a bytes field (or an embedded message's encoding).
    mutating func bytes<Bytes: Collection>(_ number: Int, _ value: Bytes) where Bytes.Element == UInt8 {
        tag(number, .lengthDelimited)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// Appends a string field as UTF-8.
    mutating func string(_ number: Int, _ value: String) {
        bytes(number, Array(value.utf8))
    }

    /// Appends bytes already encoded (a field copied from another message).
    mutating func raw<Bytes: Collection>(_ encoded: Bytes) where Bytes.Element == UInt8 {
        bytes.append(contentsOf: encoded)
    }
}
