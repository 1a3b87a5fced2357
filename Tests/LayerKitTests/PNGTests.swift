import Foundation
import Testing
@testable import LayerKit

/// Writes `bytes` to `name` in `directory` and returns the path.
private func write(_ bytes: [UInt8], to name: String, in directory: TemporaryDirectory) throws -> String {
    let path = directory.file(name)
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return path
}

/// Encodes with `TestPNGEncoder`, then reads the file back through LayerKit.
private func decode(width: UInt32, height: UInt32, bitDepth: UInt8 = 8, colorType: TestPNGEncoder.ColorType,
                    rows: [[UInt8]], palette: [UInt8]? = nil, transparency: [UInt8]? = nil) throws -> Tensor {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let bytes = TestPNGEncoder.encode(width: width, height: height, bitDepth: bitDepth, colorType: colorType,
                                      rows: rows, palette: palette, transparency: transparency)
    return try Tensor(pngFile: write(bytes, to: "in.png", in: directory))
}

/// 8-bit levels as the 0...1 values a reader must produce.
private func unit(_ levels: [Int]) -> [Float] { levels.map { Float($0) / 255 } }

@Suite struct PNGReadingTests {
    @Test func readsGray8() throws {
        let tensor = try decode(width: 3, height: 2, colorType: .gray, rows: [[0, 128, 255], [1, 2, 3]])
        #expect(tensor.shape == [1, 1, 2, 3])
        #expect(tensor.values == unit([0, 128, 255, 1, 2, 3]))
    }

    @Test func readsRGBAsPlanes() throws {
        let tensor = try decode(width: 2, height: 1, colorType: .rgb, rows: [[10, 20, 30, 40, 50, 60]])
        #expect(tensor.shape == [1, 3, 1, 2])
        #expect(tensor.values == unit([10, 40, 20, 50, 30, 60]))
    }

    @Test func readsRGBA() throws {
        let tensor = try decode(width: 2, height: 1, colorType: .rgba, rows: [[1, 2, 3, 4, 5, 6, 7, 8]])
        #expect(tensor.shape == [1, 4, 1, 2])
        #expect(tensor.values == unit([1, 5, 2, 6, 3, 7, 4, 8]))
    }

    @Test func expandsGrayAlphaToRGBA() throws {
        let tensor = try decode(width: 2, height: 1, colorType: .grayAlpha, rows: [[100, 255, 7, 0]])
        #expect(tensor.shape == [1, 4, 1, 2])
        #expect(tensor.values == unit([100, 7, 100, 7, 100, 7, 255, 0]))
    }

    @Test func expandsPaletteToRGB() throws {
        let palette: [UInt8] = [255, 0, 0, 0, 255, 0, 0, 0, 255]
        let tensor = try decode(width: 3, height: 1, colorType: .palette, rows: [[2, 0, 1]], palette: palette)
        #expect(tensor.shape == [1, 3, 1, 3])
        #expect(tensor.values == unit([0, 255, 0, 0, 0, 255, 255, 0, 0]))
    }

    @Test func expandsPaletteWithTransparencyToRGBA() throws {
        // tRNS may be shorter than the palette; missing entries are opaque.
        let palette: [UInt8] = [255, 0, 0, 0, 255, 0, 0, 0, 255]
        let tensor = try decode(width: 3, height: 1, colorType: .palette, rows: [[2, 0, 1]],
                                palette: palette, transparency: [10, 20])
        #expect(tensor.shape == [1, 4, 1, 3])
        #expect(tensor.values == unit([0, 255, 0, 0, 0, 255, 255, 0, 0, 255, 10, 20]))
    }

    @Test func expandsGrayWithTransparencyToRGBA() throws {
        let tensor = try decode(width: 2, height: 1, colorType: .gray, rows: [[128, 9]], transparency: [0, 128])
        #expect(tensor.shape == [1, 4, 1, 2])
        #expect(tensor.values == unit([128, 9, 128, 9, 128, 9, 0, 255]))
    }

    @Test func scalesOneBitGrayTo0And1() throws {
        // Ten pixels 1011000010, packed most significant bit first.
        let tensor = try decode(width: 10, height: 1, bitDepth: 1, colorType: .gray, rows: [[0b1011_0000, 0b1000_0000]])
        #expect(tensor.shape == [1, 1, 1, 10])
        #expect(tensor.values == [1, 0, 1, 1, 0, 0, 0, 0, 1, 0])
    }

    @Test func reads16BitSamples() throws {
        let gray = try decode(width: 2, height: 1, bitDepth: 16, colorType: .gray, rows: [[0x01, 0x02, 0xFF, 0xFF]])
        #expect(gray.values == [Float(0x0102) / 65535, 1])
        let rgb = try decode(width: 1, height: 1, bitDepth: 16, colorType: .rgb, rows: [[0x12, 0x34, 0, 0, 0x80, 0]])
        #expect(rgb.shape == [1, 3, 1, 1])
        #expect(rgb.values == [Float(0x1234) / 65535, 0, Float(0x8000) / 65535])
    }

    @Test func readsImagesSpanningSeveralDeflateBlocks() throws {
        let (width, height) = (300, 300)
        let rows = (0..<height).map { y in (0..<width).map { x in UInt8((x + y) % 256) } }
        let tensor = try decode(width: UInt32(width), height: UInt32(height), colorType: .gray, rows: rows)
        #expect(tensor.shape == [1, 1, height, width])
        #expect(tensor.values == rows.flatMap { $0.map { Float($0) / 255 } })
    }
}

@Suite struct PNGErrorTests {
    static let valid = TestPNGEncoder.encode(width: 4, height: 4, bitDepth: 8, colorType: .rgb,
                                             rows: Array(repeating: Array(repeating: 77, count: 12), count: 4))

    /// A file claiming `width` x `height` gray pixels, with one tiny IDAT,
    /// as a decompression bomb would start.
    static func claiming(width: UInt32, height: UInt32) -> [UInt8] {
        Array(valid[0..<8]) + TestPNGEncoder.chunk("IHDR", TestPNGEncoder.bigEndian(width)
            + TestPNGEncoder.bigEndian(height) + [8, 0, 0, 0, 0])
            + TestPNGEncoder.chunk("IDAT", TestPNGEncoder.zlibStored([0, 0])) + TestPNGEncoder.chunk("IEND", [])
    }

    static let cases: [(String, [UInt8])] = {
        var corruptCRC = valid
        corruptCRC[corruptCRC.count - 20] ^= 0xFF  // inside IDAT, so its CRC no longer matches
        return [
            ("empty file", []),
            ("random bytes", (0..<512).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 7) }),
            ("signature only", Array(valid[0..<8])),
            ("truncated in IHDR", Array(valid[0..<20])),
            ("truncated in IDAT", Array(valid[0..<(valid.count - 20)])),
            ("no IEND", Array(valid[0..<(valid.count - 12)])),
            ("corrupt IDAT CRC", corruptCRC),
            ("width over the side limit", claiming(width: 20000, height: 1)),
            ("too many pixels", claiming(width: 16384, height: 8192)),
            ("zero width", claiming(width: 0, height: 1)),
        ]
    }()

    @Test(arguments: cases)
    func corruptFileThrows(name: String, bytes: [UInt8]) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try write(bytes, to: "bad.png", in: directory)
        let error = #expect(throws: LayerKitError.self) { try Tensor(pngFile: path) }
        let thrown = try #require(error)
        #expect(thrown == .file(thrown.description))
        #expect(thrown.description.contains(path) && !thrown.description.contains("\n"))
    }

    @Test func oversizedImageNamesTheLimit() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try write(Self.claiming(width: 16384, height: 8192), to: "big.png", in: directory)
        let error = #expect(throws: LayerKitError.self) { try Tensor(pngFile: path) }
        #expect(error?.description.contains("limit") == true)
    }

    @Test func missingFileThrows() {
        #expect(throws: LayerKitError.self) { try Tensor(pngFile: "/nonexistent/x.png") }
    }

    @Test func validControlFileReads() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let tensor = try Tensor(pngFile: write(Self.valid, to: "ok.png", in: directory))
        #expect(tensor.shape == [1, 3, 4, 4])
    }
}

@Suite struct ActivationPNGTests {
    /// Writes `tensor` as an activation picture and returns the file's bytes
    /// and the picture as read back (a 1x1xHxW tensor of levels / 255).
    private func draw(_ tensor: Tensor) throws -> (file: [UInt8], levels: [[Int]]) {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("act.png")
        try tensor.writeActivationPNG(to: path)
        #expect(try directory.contents() == ["act.png"])
        let picture = try Tensor(pngFile: path)
        let (c, h, w) = (picture.shape[1], picture.shape[2], picture.shape[3])
        #expect(c == 1)
        let levels = (0..<h).map { y in (0..<w).map { x in Int((picture[y * w + x] * 255).rounded()) } }
        return ([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), levels)
    }

    @Test func drawsChannelsAsGrid() throws {
        // 1x4x2x3: values 0...23; 4 channels make a 2x2 grid of 2x3 tiles,
        // so the picture is 7 wide and 5 high with a separator at row 2 and column 3.
        let tensor = try Tensor(shape: [1, 4, 2, 3], values: (0..<24).map(Float.init))
        let (file, levels) = try draw(tensor)
        // IHDR straight from the file: width 7, height 5, 8-bit gray.
        #expect(Array(file[16..<29]) == [0, 0, 0, 7, 0, 0, 0, 5, 8, 0, 0, 0, 0])
        let level = { (v: Int) in Int((Double(v) / 23 * 255).rounded()) }
        let s = 128
        #expect(levels == [
            [level(0), level(1), level(2), s, level(6), level(7), level(8)],
            [level(3), level(4), level(5), s, level(9), level(10), level(11)],
            [s, s, s, s, s, s, s],
            [level(12), level(13), level(14), s, level(18), level(19), level(20)],
            [level(15), level(16), level(17), s, level(21), level(22), level(23)],
        ])
        #expect(levels[0][0] == 0 && levels[4][6] == 255)
    }

    @Test func stacksBatchItemsAndLeavesUnusedCellsGray() throws {
        // 2x3x1x1: 3 channels need a 2-column grid of 2 rows per item; 4 rows of 1-pixel tiles.
        let tensor = try Tensor(shape: [2, 3, 1, 1], values: [0, 1, 2, 3, 4, 5])
        let (_, levels) = try draw(tensor)
        #expect(levels == [[0, 128, 51], [128, 128, 128], [102, 128, 128], [128, 128, 128],
                           [153, 128, 204], [128, 128, 128], [255, 128, 128]])
    }

    @Test func mapsSpecialValues() throws {
        let tensor = try Tensor(shape: [1, 1, 1, 5], values: [.nan, .infinity, -.infinity, -1, 3])
        #expect(try draw(tensor).levels == [[0, 255, 0, 0, 255]])
    }

    @Test func mapsExtremeFiniteValuesWithoutOverflow() throws {
        let tensor = try Tensor(shape: [1, 1, 1, 3], values: [-.greatestFiniteMagnitude, 0, .greatestFiniteMagnitude])
        #expect(try draw(tensor).levels == [[0, 128, 255]])
    }

    @Test func drawsConstantAndAllNaNTensors() throws {
        #expect(try draw(Tensor(shape: [1, 1, 2, 2], values: [7, 7, 7, 7])).levels == [[128, 128], [128, 128]])
        #expect(try draw(Tensor(shape: [1, 1, 1, 2], values: [.nan, .nan])).levels == [[0, 0]])
    }

    @Test func roundTripsEveryGrayLevel() throws {
        let tensor = try Tensor(shape: [1, 1, 16, 16], values: (0..<256).map { Float($0) / 255 })
        #expect(try draw(tensor).levels.flatMap { $0 } == Array(0..<256))
    }

    @Test(arguments: [[0, 3], [1, 1, 1, 1, 1], [1, 1, 1, 20000], [1, 1, 20000, 1], [9000, 9000]])
    func refusesUndrawableShapes(shape: [Int]) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("keep.png")
        try Data("precious".utf8).write(to: URL(fileURLWithPath: path))
        let tensor = try Tensor(shape: shape)
        #expect(throws: LayerKitError.self) { try tensor.writeActivationPNG(to: path) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("precious".utf8))
        #expect(try directory.contents() == ["keep.png"])
    }

    @Test func failedWriteLeavesNoFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let tensor = try Tensor(shape: [1, 1, 2, 2])
        #expect(throws: LayerKitError.self) { try tensor.writeActivationPNG(to: directory.file("missing/act.png")) }
        try FileManager.default.createDirectory(atPath: directory.file("taken"), withIntermediateDirectories: false)
        #expect(throws: LayerKitError.self) { try tensor.writeActivationPNG(to: directory.file("taken")) }
        #expect(try directory.contents() == ["taken"])
    }
}
