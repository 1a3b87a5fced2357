import Foundation
import Testing
@testable import LayerKit

/// numpy's fixed-width unicode arrays (`<U`n: n UTF-32LE code units per
/// element, NUL-padded) through `TypedTensor(npyFile:)` and `writeNPY`:
/// files built byte by byte here and one numpy wrote
/// (`Fixtures/ml-strings`), and the errors of object arrays and lying headers.
@Suite struct NPYStringTests {
    /// A version 1.0 `.npy` file of `header` (the dict) and `payload`, built
    /// by hand, independent of LayerKit's writer.
    static func file(_ header: String, _ payload: [UInt8], in directory: TemporaryDirectory) throws -> String {
        let text = Array((header + "\n").utf8)
        let bytes = [0x93] + Array("NUMPY".utf8) + [1, 0, UInt8(text.count & 0xFF), UInt8(text.count >> 8)] + text + payload
        let path = directory.file("strings.npy")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// `strings` as `<U`width elements: UTF-32LE code units, NUL-padded.
    static func utf32(_ strings: [String], width: Int) -> [UInt8] {
        strings.flatMap { string in
            let units = string.unicodeScalars.map(\.value) + Array(repeating: 0, count: width - string.unicodeScalars.count)
            return units.flatMap { unit in (0..<4).map { UInt8(truncatingIfNeeded: unit >> (8 * $0)) } }
        }
    }

    @Test func readsFixedWidthUnicodeDroppingThePadding() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let strings = ["grün", "", "a\u{0}b", "日本"]
        let path = try Self.file("{'descr': '<U4', 'fortran_order': False, 'shape': (2, 2), }", Self.utf32(strings, width: 4),
                                 in: directory)
        let tensor = try TypedTensor(npyFile: path)
        #expect(tensor.elementType == .string && tensor.shape == [2, 2])
        #expect(tensor.strings == strings)
    }

    /// numpy's own file: the pipeline fixture's input, two columns of colors and sizes.
    @Test func readsWhatNumpyWrote() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/ml-strings/one_hot_logistic/x.npy").path
        let tensor = try TypedTensor(npyFile: path)
        #expect(tensor.elementType == .string && tensor.shape == [12, 2])
        #expect(Array(tensor.strings.suffix(4)) == ["purple", "M", "red", "XL"])
    }

    @Test func writesNumpysLayoutAndReadsItBack() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("out.npy")
        let tensor = try TypedTensor(shape: [3], strings: ["cat", "", "äpfel"])
        try tensor.writeNPY(to: path)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let dict = "{'descr': '<U5', 'fortran_order': False, 'shape': (3,), }"
        #expect(String(decoding: bytes[10..<(10 + dict.utf8.count)], as: UTF8.self) == dict)
        #expect(bytes.count == 128 + 3 * 5 * 4 && bytes[127] == UInt8(ascii: "\n"))
        #expect(Array(bytes.suffix(3 * 5 * 4)) == Self.utf32(["cat", "", "äpfel"], width: 5))
        #expect(try TypedTensor(npyFile: path) == tensor)
        // Empty strings alone: one character per element, as numpy's '<U1'.
        try TypedTensor(shape: [2], strings: ["", ""]).writeNPY(to: path)
        #expect(try TypedTensor(npyFile: path).strings == ["", ""])
    }

    @Test(arguments: [
        ("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", "Python pickles"),
        ("{'descr': '>U2', 'fortran_order': False, 'shape': (1,), }", "dtype '>U2' is not supported"),
        ("{'descr': '<U1000000000', 'fortran_order': False, 'shape': (1000,), }", "data is truncated"),
        ("{'descr': '<U4611686018427387904', 'fortran_order': False, 'shape': (1,), }", "too wide"),
    ])
    func refusesObjectArraysAndLyingHeaders(header: String, message: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try Self.file(header, Self.utf32(["ab"], width: 2), in: directory)
        let error = #expect(throws: LayerKitError.self) { try TypedTensor(npyFile: path) }
        #expect(error?.description.contains(message) == true, "\(String(describing: error))")
    }

    @Test func refusesCodeUnitsThatAreNoCharacter() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try Self.file("{'descr': '<U1', 'fortran_order': False, 'shape': (1,), }", [0x00, 0xD8, 0, 0], in: directory)
        let error = #expect(throws: LayerKitError.self) { try TypedTensor(npyFile: path) }
        #expect(error?.description.contains("no Unicode character") == true, "\(String(describing: error))")
    }
}
