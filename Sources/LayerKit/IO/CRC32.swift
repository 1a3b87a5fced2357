/// CRC-32 as zlib, PNG and gzip compute it (IEEE 802.3: polynomial
/// 0xEDB88320 reflected, initial and final value 0xFFFFFFFF), so Python's
/// `zlib.crc32` checks what LayerKit writes.
package enum CRC32 {
    /// The CRC of each byte value, computed once.
    private static let table: [UInt32] = (0..<256).map { value in
        (0..<8).reduce(UInt32(value)) { crc, _ in crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
    }

    /// The CRC-32 of `bytes`.
    package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int(UInt8(truncatingIfNeeded: crc) ^ byte)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
