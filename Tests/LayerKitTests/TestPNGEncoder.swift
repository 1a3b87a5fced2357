/// A minimal PNG encoder written from the PNG specification, independent of
/// libpng, so reading tests have expected pixels libpng did not produce:
/// every row uses filter 0 and the zlib stream uses stored deflate blocks.
enum TestPNGEncoder {
    /// PNG colour types (PNG spec, table 11.1).
    enum ColorType: UInt8 {
        case gray = 0, rgb = 2, palette = 3, grayAlpha = 4, rgba = 6
    }

    /// A PNG file of `rows` (raw sample bytes, no filter byte) with optional
    /// PLTE and tRNS chunk contents.
    static func encode(width: UInt32, height: UInt32, bitDepth: UInt8, colorType: ColorType,
                       rows: [[UInt8]], palette: [UInt8]? = nil, transparency: [UInt8]? = nil) -> [UInt8] {
        let ihdr = bigEndian(width) + bigEndian(height) + [bitDepth, colorType.rawValue, 0, 0, 0]
        var file: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", ihdr)
        if let palette { file += chunk("PLTE", palette) }
        if let transparency { file += chunk("tRNS", transparency) }
        return file + chunk("IDAT", zlibStored(rows.flatMap { [0] + $0 })) + chunk("IEND", [])
    }

    /// Length, type, data and CRC-32 of the type and data.
    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return bigEndian(UInt32(data.count)) + body + bigEndian(crc32(body))
    }

    /// A zlib stream of stored (uncompressed) deflate blocks of up to 65535 bytes.
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var start = 0
        repeat {
            let end = min(start + 65535, data.count)
            let length = UInt16(end - start)
            out += [end == data.count ? 1 : 0, UInt8(length & 0xFF), UInt8(length >> 8),
                    UInt8(~length & 0xFF), UInt8(~length >> 8)]
            out += data[start..<end]
            start = end
        } while start < data.count
        return out + bigEndian(adler32(data))
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        }
        return ~crc
    }

    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var (a, b): (UInt32, UInt32) = (1, 0)
        for byte in bytes {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return b << 16 | a
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) }
    }
}
