import LayerKit

/// Classic mutations of an input, all drawn from one `SeededGenerator`, so a
/// run is reproducible from its seed: bit flips, byte inserts and deletes,
/// interesting integers (at the target's header offsets half the time),
/// splicing with a second input, truncation, repeated blocks, and
/// token-level edits (swap, delete, duplicate, replace with a word of the
/// target's dictionary: operators, function names, numbers such as 1e308).
struct Mutator {
    var random: SeededGenerator
    /// Words of the target's syntax.
    let dictionary: [[UInt8]]
    /// Byte offsets of header fields worth overwriting with interesting integers.
    let hotOffsets: [Int]
    /// Inputs never grow past this many bytes.
    static let maxSize = 1 << 16

    static let interesting: [UInt64] = [0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x1_0000,
                                        0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 1 << 40, 1 << 62, .max]

    mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int.random(in: 0..<n, using: &random) }

    /// One to five stacked mutations of `input`; `other` is the splice partner.
    mutating func mutate(_ input: [UInt8], other: [UInt8]) -> [UInt8] {
        var bytes = input
        for _ in 0...below(5) { step(&bytes, other: other) }
        if bytes.count > Self.maxSize { bytes.removeLast(bytes.count - Self.maxSize) }
        return bytes
    }

    private mutating func step(_ b: inout [UInt8], other: [UInt8]) {
        let position = below(b.count + 1)  // an insertion point, b.count included
        switch below(12) {
        case 0 where !b.isEmpty:  // flip one bit
            b[position % b.count] ^= 1 << UInt8(below(8))
        case 1 where !b.isEmpty:  // random byte
            b[position % b.count] = UInt8(below(256))
        case 2:  // insert random bytes
            b.insert(contentsOf: (0...below(8)).map { _ in UInt8(below(256)) }, at: position)
        case 3 where !b.isEmpty:  // delete a range
            let start = position % b.count
            b.removeSubrange(start..<min(b.count, start + 1 + below(16)))
        case 4:  // an interesting integer, 1 to 8 bytes, either byte order
            let width = [1, 2, 4, 8][below(4)]
            let value = below(4) == 0 ? UInt64(bitPattern: -Int64(below(1000))) : Self.interesting[below(Self.interesting.count)]
            let offset = !hotOffsets.isEmpty && below(2) == 0 ? hotOffsets[below(hotOffsets.count)] : position
            let bigEndian = below(2) == 0
            for i in 0..<width {
                let shift = UInt64(8 * (bigEndian ? width - 1 - i : i))
                if offset + i < b.count { b[offset + i] = UInt8(truncatingIfNeeded: value >> shift) }
            }
        case 5:  // splice: our head, the other's tail
            let tail = other.isEmpty ? [] : other[below(other.count)...]
            b = Array(b[..<position]) + tail
        case 6:  // truncate
            b.removeSubrange(position...)
        case 7 where !b.isEmpty:  // repeat a block many times (nesting and length bombs)
            let start = position % b.count
            let block = b[start..<min(b.count, start + 1 + below(8))]
            let times = [2, 16, 256, 4096, 1 << 16][below(5)]
            b.insert(contentsOf: Array(repeating: Array(block), count: min(times, Self.maxSize / block.count)).joined(),
                     at: start)
        case 8:  // insert a dictionary word
            b.insert(contentsOf: dictionary[below(dictionary.count)], at: position)
        default:  // token-level: replace, delete, duplicate or swap tokens
            var tokens = Self.tokens(b)
            guard !tokens.isEmpty else { return }
            let i = below(tokens.count), j = below(tokens.count)
            switch below(4) {
            case 0: tokens[i] = dictionary[below(dictionary.count)]
            case 1: tokens.remove(at: i)
            case 2: tokens.insert(tokens[i], at: j)
            default: tokens.swapAt(i, j)
            }
            b = Array(tokens.joined())
        }
    }

    /// Runs of letters, digits, `_` and `.` are one token; any other byte is its own.
    static func tokens(_ bytes: [UInt8]) -> [[UInt8]] {
        func isWord(_ c: UInt8) -> Bool {
            (c >= 0x30 && c <= 0x39) || (c | 0x20 >= 0x61 && c | 0x20 <= 0x7A) || c == 0x5F || c == 0x2E
        }
        var tokens: [[UInt8]] = []
        var i = 0
        while i < bytes.count {
            var j = i + 1
            if isWord(bytes[i]) { while j < bytes.count, isWord(bytes[j]) { j += 1 } }
            tokens.append(Array(bytes[i..<j]))
            i = j
        }
        return tokens
    }
}

/// Rewrites the CRC of every whole chunk after the PNG signature, so that
/// mutations reach libpng's decoder instead of dying at the CRC check.
func fixPNGChecksums(_ b: inout [UInt8]) {
    var offset = 8
    while offset + 12 <= b.count {
        let length = b[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        guard length <= b.count - offset - 12 else { return }
        let crc = b[offset + 4..<offset + 8 + length].withUnsafeBytes { CRC32.checksum($0) }
        for i in 0..<4 { b[offset + 8 + length + i] = UInt8(truncatingIfNeeded: crc >> (24 - 8 * UInt32(i))) }
        offset += 12 + length
    }
}

/// Rewrites the header length of a `.npy` input to end at its first newline
/// (or at the end), so inserts and deletes inside the header dict reach the
/// dict parser instead of dying at the length check.
func fixNPYHeaderLength(_ b: inout [UInt8]) {
    guard b.count >= 12, b[6] >= 1, b[6] <= 3 else { return }
    let start = b[6] == 1 ? 10 : 12
    guard b.count >= start else { return }
    let end = b[start...].firstIndex(of: 0x0A).map { $0 + 1 } ?? b.count
    let length = end - start
    if b[6] == 1, length > 0xFFFF { return }
    for i in 0..<(start - 8) { b[8 + i] = UInt8(truncatingIfNeeded: length >> (8 * i)) }
}


/// Rewrites the trailing CRC-32 of a training checkpoint, so that mutations
/// reach the header and size checks instead of dying at the checksum.
func fixCheckpointChecksum(_ b: inout [UInt8]) {
    guard b.count >= 4 else { return }
    let crc = b.dropLast(4).withUnsafeBytes { CRC32.checksum($0) }
    for i in 0..<4 { b[b.count - 4 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
}
