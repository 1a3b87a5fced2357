import Foundation
import Testing
@testable import LayerKit

/// `.npy` bytes built by hand, independent of LayerKit's writer: magic,
/// version, little-endian header length, header text, payload.
private func npy(_ header: String, version: UInt8 = 1, payload: [UInt8] = []) -> Data {
    let text = Array(header.utf8)
    let lengthBytes = version == 1 ? 2 : 4
    let length = (0..<lengthBytes).map { UInt8(truncatingIfNeeded: text.count >> (8 * $0)) }
    return Data([0x93] + Array("NUMPY".utf8) + [version, 0] + length + text + payload)
}

/// The little-endian bytes of `values`.
private func littleEndian<T: FixedWidthInteger>(_ values: [T]) -> [UInt8] {
    values.flatMap { value in (0..<T.bitWidth / 8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
}

private let f4Header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }          \n"

@Suite struct NPYReadingTests {
    @Test func readsFloat32() throws {
        let bits: [UInt32] = [0x3FC0_0000, 0xC000_0000, 0x3E80_0000, 0x0000_0001, 0x7F7F_FFFF, 0x8000_0000]
        let tensor = try Tensor(npyData: npy(f4Header, payload: littleEndian(bits)))
        #expect(tensor.shape == [2, 3])
        #expect(tensor.values == [1.5, -2, 0.25, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0])
        #expect(tensor[5].sign == .minus)
    }

    @Test func readsFloat16IncludingSpecialValues() throws {
        let bits: [UInt16] = [0x3C00, 0x0001, 0x7C00, 0xFC00, 0x7BFF, 0x8000,
                              0x03FF, 0x0400, 0xC000, 0x3555, 0x7E00, 0xFE01]
        let header = "{'descr': '<f2', 'fortran_order': False, 'shape': (12,), }"
        let tensor = try Tensor(npyData: npy(header, payload: littleEndian(bits)))
        #expect(tensor.shape == [12])
        let expected: [Float] = [1, 0x1p-24, .infinity, -.infinity, 65504, -0.0,
                                 1023 * 0x1p-24, 0x1p-14, -2, 0.333251953125]
        #expect(Array(tensor.values.prefix(10)) == expected)
        #expect(tensor[5].sign == .minus)
        #expect(tensor[10].isNaN && tensor[10].sign == .plus)
        #expect(tensor[11].isNaN && tensor[11].sign == .minus)
    }

    #if !(os(macOS) && arch(x86_64))  // Swift has no Float16 there
    @Test func convertsEveryHalfBitPatternLikeTheStandardLibrary() {
        for bits in UInt16.min...UInt16.max {
            let ours = Float(halfBits: bits), reference = Float(Float16(bitPattern: bits))
            if reference.isNaN {
                #expect(ours.isNaN && ours.sign == reference.sign, "\(bits)")
            } else {
                #expect(ours.bitPattern == reference.bitPattern, "\(bits)")
            }
        }
    }
    #endif

    @Test func readsFloat64RoundingToFloat() throws {
        let bits: [UInt64] = [0x3FF0_0000_0000_0000, 0xBFE0_0000_0000_0000,
                              0x3FB9_9999_9999_999A, 0x7FEF_FFFF_FFFF_FFFF]
        let header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }"
        let tensor = try Tensor(npyData: npy(header, payload: littleEndian(bits)))
        #expect(tensor.values == [1, -0.5, 0.1, .infinity])
    }

    @Test(arguments: [UInt8(2), 3])
    func readsVersions2And3(version: UInt8) throws {
        let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n"
        let tensor = try Tensor(npyData: npy(header, version: version, payload: littleEndian([UInt32(0x4040_0000)])))
        #expect(tensor.shape == [1])
        #expect(tensor.values == [3])
    }

    @Test(arguments: [
        ("{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(2,)}", [2]),
        ("{ 'shape' : ( 1 , 2 , ) ,\t'fortran_order' : False , 'descr' : '<f4' , }   \n", [1, 2]),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 1L), }", [2, 1]),
    ])
    func toleratesHeaderSpelling(header: String, shape: [Int]) throws {
        let tensor = try Tensor(npyData: npy(header, payload: littleEndian([UInt32(0x3F80_0000), 0x4000_0000])))
        #expect(tensor.shape == shape)
        #expect(tensor.values == [1, 2])
    }

    @Test func readsScalarAndEmptyShapes() throws {
        let scalar = try Tensor(npyData: npy("{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
                                             payload: littleEndian([UInt32(0x4120_0000)])))
        #expect(scalar.shape == [])
        #expect(scalar.values == [10])
        let empty = try Tensor(npyData: npy("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }"))
        #expect(empty.shape == [0, 3])
        #expect(empty.count == 0)
    }

    @Test func ignoresBytesAfterTheData() throws {
        // numpy reads exactly the elements the shape asks for, and so do we.
        let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }"
        let tensor = try Tensor(npyData: npy(header, payload: littleEndian([UInt32(0x3F80_0000), 0xFFFF_FFFF])))
        #expect(tensor.values == [1])
    }

    @Test func readsFromFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("a.npy")
        try npy(f4Header, payload: littleEndian([UInt32](repeating: 0x3F80_0000, count: 6)))
            .write(to: URL(fileURLWithPath: path))
        let tensor = try Tensor(npyFile: path)
        #expect(tensor.shape == [2, 3])
        #expect(tensor.values == Array(repeating: 1, count: 6))
    }

    @Test func missingFileThrows() throws {
        let error = #expect(throws: LayerKitError.self) { try Tensor(npyFile: "/nonexistent/x.npy") }
        #expect(error?.description.contains("/nonexistent/x.npy") == true)
    }
}

/// One malformed or unsupported input and the error kind it must raise.
struct BadNPY: Sendable, CustomTestStringConvertible {
    let name: String
    let data: Data
    let unsupported: Bool
    var testDescription: String { name }

    init(_ name: String, _ header: String, version: UInt8 = 1, payload: [UInt8] = [], unsupported: Bool = false) {
        self.init(name, npy(header, version: version, payload: payload), unsupported: unsupported)
    }

    init(_ name: String, _ data: Data, unsupported: Bool = false) {
        (self.name, self.data, self.unsupported) = (name, data, unsupported)
    }
}

private func header(descr: String = "'<f4'", fortran: String = "False", shape: String = "(1,)") -> String {
    "{'descr': \(descr), 'fortran_order': \(fortran), 'shape': \(shape), }"
}

private let fourBytes: [UInt8] = [0, 0, 0x80, 0x3F]

@Suite struct NPYErrorTests {
    static let cases: [BadNPY] = [
        BadNPY("empty input", Data()),
        BadNPY("bad magic", Data([0x93] + Array("NUMPX".utf8) + [1, 0, 0, 0])),
        BadNPY("magic only", Data([0x93] + Array("NUMPY".utf8))),
        BadNPY("truncated header length", Data([0x93] + Array("NUMPY".utf8) + [2, 0, 5, 0])),
        BadNPY("header length past end", Data([0x93] + Array("NUMPY".utf8) + [1, 0, 200, 0] + Array("{'descr'".utf8))),
        BadNPY("version 4.0", header(), version: 4, payload: fourBytes, unsupported: true),
        BadNPY("big-endian f4", header(descr: "'>f4'"), payload: fourBytes, unsupported: true),
        BadNPY("int32", header(descr: "'<i4'"), payload: fourBytes, unsupported: true),
        BadNPY("object", header(descr: "'|O'"), payload: fourBytes, unsupported: true),
        BadNPY("structured", header(descr: "[('a', '<f4')]"), payload: fourBytes, unsupported: true),
        BadNPY("Fortran order", header(fortran: "True"), payload: fourBytes, unsupported: true),
        BadNPY("fortran_order not a bool", header(fortran: "0"), payload: fourBytes),
        BadNPY("truncated data", header(shape: "(2, 3)"), payload: Array(repeating: 0, count: 20)),
        BadNPY("huge shape without data", header(shape: "(1000000000000,)"), payload: fourBytes),
        BadNPY("negative dimension", header(shape: "(-1, 3)"), payload: fourBytes),
        BadNPY("element count overflow", header(shape: "(4294967296, 4294967296)"), payload: fourBytes),
        BadNPY("integer overflow", header(shape: "(99999999999999999999999,)"), payload: fourBytes),
        BadNPY("shape not a tuple", header(shape: "5"), payload: fourBytes),
        BadNPY("shape a list, as numpy refuses too", header(shape: "[1]"), payload: fourBytes),
        BadNPY("shape of strings", header(shape: "('a',)"), payload: fourBytes),
        BadNPY("non-dict header", "[1, 2, 3]", payload: fourBytes),
        BadNPY("empty header", "", payload: fourBytes),
        BadNPY("missing shape", "{'descr': '<f4', 'fortran_order': False}", payload: fourBytes),
        BadNPY("unexpected key", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", payload: fourBytes),
        BadNPY("unterminated string", "{'descr': '<f4", payload: fourBytes),
        BadNPY("missing colon", "{'descr' '<f4'}", payload: fourBytes),
        BadNPY("missing comma", "{'descr': '<f4' 'shape': (1,)}", payload: fourBytes),
        BadNPY("unclosed dict", "{'descr': '<f4', ", payload: fourBytes),
        BadNPY("text after dict", header() + " x", payload: fourBytes),
        BadNPY("unknown name", header(fortran: "Maybe"), payload: fourBytes),
        BadNPY("non-string key", "{1: 2}", payload: fourBytes),
        // Nesting bombs: each overflowed the stack of the recursive literal parser
        // (Fuzz npy --seed 7 found the first: 65476 nested tuples in a version 1 header).
        BadNPY("60000 nested tuples", header(shape: String(repeating: "(", count: 60_000)), payload: fourBytes),
        BadNPY("10^6 nested lists, version 2", header(shape: String(repeating: "[", count: 1_000_000)), version: 2),
    ]

    @Test(arguments: cases)
    func throwsLayerKitError(_ input: BadNPY) throws {
        let error = #expect(throws: LayerKitError.self) { try Tensor(npyData: input.data) }
        let thrown = try #require(error)
        if input.unsupported {
            #expect(thrown == .unsupported(thrown.description))
        } else {
            #expect(thrown == .file(thrown.description))
        }
        #expect(!thrown.description.isEmpty && !thrown.description.contains("\n"))
    }

    @Test func unsupportedDtypeIsNamed() {
        let error = #expect(throws: LayerKitError.self) {
            try Tensor(npyData: npy(header(descr: "'>f4'"), payload: fourBytes))
        }
        #expect(error?.description.contains(">f4") == true)
    }
}

@Suite struct NPYWritingTests {
    @Test func writesNumpyLayout() throws {
        let tensor = try Tensor(shape: [2, 3], values: [1, 2, 3, 4, 5, -1])
        let bytes = [UInt8](tensor.npyData())
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
        let expectedHeader = dict + String(repeating: " ", count: 128 - 10 - dict.utf8.count - 1) + "\n"
        #expect(Array(bytes[0..<10]) == [0x93] + Array("NUMPY".utf8) + [1, 0, 118, 0])
        #expect(String(decoding: bytes[10..<128], as: UTF8.self) == expectedHeader)
        #expect(Array(bytes[128...]) == littleEndian([UInt32(0x3F80_0000), 0x4000_0000, 0x4040_0000,
                                                       0x4080_0000, 0x40A0_0000, 0xBF80_0000]))
    }

    @Test(arguments: [[Int](), [1], [5], [0, 4], [2, 3], [1, 3, 2, 2], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]])
    func roundTripsExactly(shape: [Int]) throws {
        let tensor = try Tensor(shape: shape)
        let specials: [Float] = [.nan, -0.0, .infinity, -.infinity, .leastNonzeroMagnitude, 0.1, -3e38]
        for i in 0..<tensor.count { tensor[i] = i < specials.count ? specials[i] : Float(i) * 0.37 - 5 }
        let data = tensor.npyData()
        #expect(try #require(data.firstIndex(of: UInt8(ascii: "\n"))) % 64 == 63)
        let copy = try Tensor(npyData: data)
        #expect(copy.shape == shape)
        #expect(copy.values.map(\.bitPattern) == tensor.values.map(\.bitPattern))
    }

    @Test func switchesToVersion2WhenTheHeaderOutgrows64KiB() throws {
        let shape = Array(repeating: 1, count: 25_000)
        let data = try Tensor(shape: shape, values: [42]).npyData()
        #expect(data[6] == 2 && data[7] == 0)
        let copy = try Tensor(npyData: data)
        #expect(copy.shape == shape && copy.values == [42])
    }

    @Test func writesFileAtomically() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("out.npy")
        try "old contents".write(toFile: path, atomically: false, encoding: .utf8)
        let tensor = try Tensor(shape: [3], values: [1, 2, 3])
        try tensor.writeNPY(to: path)
        #expect(try directory.contents() == ["out.npy"])  // no temporary file left behind
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == tensor.npyData())
        #expect(try Tensor(npyFile: path).values == [1, 2, 3])
    }

    @Test func failedWriteLeavesNothingBehind() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let tensor = try Tensor(shape: [1])
        #expect(throws: LayerKitError.self) { try tensor.writeNPY(to: directory.file("missing/out.npy")) }
        // A directory in the way: rename fails, the directory and its parent stay as they were.
        try FileManager.default.createDirectory(atPath: directory.file("taken"), withIntermediateDirectories: false)
        let error = #expect(throws: LayerKitError.self) { try tensor.writeNPY(to: directory.file("taken")) }
        #expect(error?.description.contains("taken") == true)
        #expect(try directory.contents() == ["taken"])
    }
}

/// Files are read and written in pieces (issue 14, class 5): types that are
/// converted cross the 1 MiB buffer's boundaries, a file is checked against
/// its length before the tensor is allocated, and peak memory is the tensor.
@Suite struct NPYStreamingTests {
    /// `count` elements that differ across every buffer boundary, in Double.
    static func pattern(_ count: Int) -> [Double] { (0..<count).map { Double($0 % 2000) - 999.5 } }

    @Test(arguments: ["<f2", "<f8", "<f4"])
    func convertsAcrossBufferBoundariesFromFiles(_ descr: String) throws {
        let size = ["<f2": 2, "<f4": 4, "<f8": 8][descr]!
        // 2.5 buffers' worth of elements, so pieces end mid-run and at the end.
        let count = NPYStreaming.chunkBytes * 5 / 2 / size + 3
        let values = Self.pattern(count)
        let payload: [UInt8] = switch size {
        case 2: littleEndian(values.map { Float16($0).bitPattern })
        case 4: littleEndian(values.map { Float($0).bitPattern })
        default: littleEndian(values.map { $0.bitPattern })
        }
        let header = "{'descr': '\(descr)', 'fortran_order': False, 'shape': (\(count),), }"
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/x.npy"
        try npy(header, payload: payload).write(to: URL(fileURLWithPath: path))
        let tensor = try Tensor(npyFile: path)
        #expect(tensor.shape == [count])
        // Every value of the pattern is exact in fp16 and in Float.
        #expect(tensor.values.elementsEqual(values.map { Float($0) }))
        // The same file cut one byte short is truncated, named before any allocation.
        try npy(header, payload: Array(payload.dropLast())).write(to: URL(fileURLWithPath: path))
        #expect { _ = try Tensor(npyFile: path) } throws: { "\($0)".contains("data is truncated") }
    }

    @Test func aLyingHeaderIsRefusedByTheFileLengthAlone() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/lie.npy"
        // 2^40 elements announced, 4 bytes held.
        try npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }", payload: [0, 0, 128, 63])
            .write(to: URL(fileURLWithPath: path))
        #expect { _ = try Tensor(npyFile: path) } throws: { "\($0)".contains("needs 4398046511104 bytes, found 4") }
        #expect { _ = try Tensor(npyFile: directory.path) } throws: { "\($0)".contains("not a regular file") }
    }

    @Test func writingStreamsAndReadsBack() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/y.npy"
        let count = NPYStreaming.chunkBytes / 4 * 3 + 7
        let tensor = try Tensor(shape: [count], values: Self.pattern(count).map { Float($0) })
        try tensor.writeNPY(to: path)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        // The file is the bytes npyData() gives (header and little-endian data), and reads back.
        #expect(bytes == tensor.npyData())
        #expect(bytes.count == NPYHeader.encoded(shape: [count]).count + 4 * count)
        #expect(try Tensor(npyFile: path).values == tensor.values)
    }
}
