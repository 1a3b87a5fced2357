import LayerKitCore
import Foundation

/// An ML Program's weights file (`weights/weight.bin`, MIL's blob storage):
/// a 64-byte header (record count, version 2), then records, each a 64-byte
/// metadata block (sentinel 0xDEADBEEF, data type, size in bytes, offset
/// of the data) and its data. A `BlobFileValue`'s offset is where its
/// metadata starts. Every offset and size is checked against the file's size
/// before anything is read, and the record's type and size against the
/// value's declared type.
struct MILBlobFile {
    /// Names the file in errors ("Net.mlpackage/Data/com.apple.CoreML/weights/weight.bin").
    let source: String
    private let bytes: [UInt8]

    static let headerSize = 64, metadataSize = 64, sentinel: UInt32 = 0xDEAD_BEEF

    /// The blob data types read, with the MIL type a value of each declares and its element size.
    private static let dataTypes: [UInt32: (type: MILDataType, size: Int)] = [
        1: (.float16, 2), 2: (.float32, 4), 3: (.uint8, 1), 4: (.int8, 1), 14: (.int32, 4),
    ]

    init(bytes: [UInt8], source: String) throws {
        self.bytes = bytes
        self.source = source
        guard bytes.count >= Self.headerSize else {
            throw LayerKitError.invalidModel("\(source): \(bytes.count) bytes, shorter than the 64-byte header of a "
                                             + "weights file")
        }
        let version = uint32(at: 4)
        guard version == 2 else {
            throw LayerKitError.invalidModel("\(source): weights file version \(version); LayerKit reads version 2")
        }
    }

    /// The values of the record whose metadata is at `offset`, for a value of
    /// `type` (its element count known): floats for fp16 and fp32, integers for the others.
    func values(at offset: UInt64, for type: MILTensorType, _ what: String) throws -> MILTensorData {
        func fail(_ text: String) -> LayerKitError {
            .invalidModel("\(source): \(what): the record at offset \(offset) \(text)")
        }
        guard offset >= UInt64(Self.headerSize), offset <= UInt64(bytes.count - Self.metadataSize) else {
            throw fail("is not within the file (\(bytes.count) bytes, a 64-byte header)")
        }
        let start = Int(offset)
        guard uint32(at: start) == Self.sentinel else {
            throw fail("has sentinel 0x\(String(uint32(at: start), radix: 16)), not 0xdeadbeef")
        }
        let rawType = uint32(at: start + 4)
        guard let element = Self.dataTypes[rawType] else { throw fail("holds blob data type \(rawType), which LayerKit does not read") }
        guard element.type == type.dataType else {
            throw fail("holds \(element.type) data for a value of type \(type.dataType)")
        }
        let size = uint64(at: start + 8), dataOffset = uint64(at: start + 16)
        guard dataOffset <= UInt64(bytes.count), size <= UInt64(bytes.count) - dataOffset else {
            throw fail("declares \(size) bytes at offset \(dataOffset), past the end of the file (\(bytes.count) bytes)")
        }
        guard let count = type.count, size == UInt64(count) * UInt64(element.size) else {
            throw fail("holds \(size) bytes; the value's type \(type.dims.map { $0.map(String.init) ?? "?" }) needs "
                       + "\(type.count.map { String($0 * element.size) } ?? "a known size")")
        }
        let data = bytes[Int(dataOffset)..<Int(dataOffset) + Int(size)]
        switch element.type {
        case .float16:
            return .floats(stride(from: data.startIndex, to: data.endIndex, by: 2).map {
                Float(halfBits: UInt16(data[$0]) | UInt16(data[$0 + 1]) << 8)
            })
        case .float32:
            return .floats(stride(from: data.startIndex, to: data.endIndex, by: 4).map { Float(bitPattern: uint32(at: $0)) })
        case .int32:
            return .ints(stride(from: data.startIndex, to: data.endIndex, by: 4).map {
                Int64(Int32(bitPattern: uint32(at: $0)))
            })
        case .int8: return .ints(data.map { Int64(Int8(bitPattern: $0)) })
        default: return .ints(data.map { Int64($0) })
        }
    }

    private func uint32(at offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
    }

    private func uint64(at offset: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
    }
}
