import Foundation
import LayerKit
import Testing

/// `ImageFolderBatchProvider` and `ClassLabels` on folders of PNGs written
/// by `TestPNGEncoder` (not libpng), with the expected inputs worked out here
/// from the bytes in Double: item order, resizing, channel fitting,
/// normalization, and the errors for labels that do not fit the pictures.
struct ImageFolderBatchProviderTests {
    /// An 8-bit PNG of `channels` (1 gray, 3 RGB, 4 RGBA) samples per pixel,
    /// sample (y, x, c) = `sample(y, x, c)`; returns the bytes written.
    @discardableResult
    static func png(_ path: String, width: Int, height: Int, channels: Int,
                    sample: (Int, Int, Int) -> UInt8) throws -> [[[UInt8]]] {
        let type: TestPNGEncoder.ColorType = [1: .gray, 3: .rgb, 4: .rgba][channels]!
        let pixels = (0..<height).map { y in (0..<width).map { x in (0..<channels).map { sample(y, x, $0) } } }
        let bytes = TestPNGEncoder.encode(width: UInt32(width), height: UInt32(height), bitDepth: 8, colorType: type,
                                          rows: pixels.map { $0.flatMap { $0 } })
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return pixels
    }

    @Test func itemsAreThePicturesInNameOrderWithTheirLabels() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // Written out of order, with files that are not items beside them.
        for (name, level) in [("b.png", 20), ("c.png", 30), ("a.png", 10)] {
            try Self.png(folder.file(name), width: 3, height: 2, channels: 3) { y, x, c in UInt8(level + 3 * y + x + 100 * c / 2) }
        }
        try Self.png(folder.file(".hidden.png"), width: 3, height: 2, channels: 3) { _, _, _ in 0 }
        try Data("2\n0\n1\n".utf8).write(to: URL(fileURLWithPath: folder.file("labels.txt")))
        try FileManager.default.createDirectory(atPath: folder.file("sub.png"), withIntermediateDirectories: false)
        let provider = try ImageFolderBatchProvider(folder: URL(fileURLWithPath: folder.path), labels: [7, 8, 9],
                                                    width: 3, height: 2, channels: 3, classes: 10)
        #expect(provider.count == 3)
        #expect(provider.files.map { URL(fileURLWithPath: $0).lastPathComponent } == ["a.png", "b.png", "c.png"])
        for (index, level) in [10, 20, 30].enumerated() {
            let (input, target) = try provider.features(at: index)
            #expect(input.shape == [3, 2, 3])
            #expect(target.shape == [1] && target[0] == Float(7 + index))
            for c in 0..<3 {
                for y in 0..<2 {
                    for x in 0..<3 {
                        let expected = Double(level + 3 * y + x + 100 * c / 2) / 255
                        #expect(abs(Double(input[(c * 2 + y) * 3 + x]) - expected) <= 1e-7)
                    }
                }
            }
        }
        #expect(throws: LayerKitError.self) { try provider.features(at: 3) }
    }

    @Test func picturesAreResizedFittedToTheChannelsAndNormalized() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // A 4x4 gray picture halved to 2x2: with half-pixel centres each output is its 2x2 block's mean.
        let gray = try Self.png(folder.file("0-gray.png"), width: 4, height: 4, channels: 1) { y, x, _ in UInt8(16 * y + 3 * x) }
        // A 2x2 RGBA picture keeps its size and loses its alpha.
        let rgba = try Self.png(folder.file("1-rgba.png"), width: 2, height: 2, channels: 4) { y, x, c in UInt8(40 * c + 2 * y + x) }
        let provider = try ImageFolderBatchProvider(folder: URL(fileURLWithPath: folder.path), labels: [1, 0],
                                                    width: 2, height: 2, channels: 3, normalization: .signed)
        let (small, _) = try provider.features(at: 0)
        #expect(small.shape == [3, 2, 2])
        for c in 0..<3 {
            for y in 0..<2 {
                for x in 0..<2 {
                    let block = [(0, 0), (0, 1), (1, 0), (1, 1)].map { Double(gray[2 * y + $0.0][2 * x + $0.1][0]) / 255 }
                    let expected = 2 * block.reduce(0, +) / 4 - 1
                    #expect(abs(Double(small[(c * 2 + y) * 2 + x]) - expected) <= 1e-6, "gray c\(c) y\(y) x\(x)")
                }
            }
        }
        let (colour, _) = try provider.features(at: 1)
        for c in 0..<3 {
            for y in 0..<2 {
                for x in 0..<2 {
                    let expected = 2 * Double(rgba[y][x][c]) / 255 - 1
                    #expect(abs(Double(colour[(c * 2 + y) * 2 + x]) - expected) <= 1e-6, "rgba c\(c) y\(y) x\(x)")
                }
            }
        }
    }

    @Test func labelsThatDoNotFitThePicturesAreErrors() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let url = URL(fileURLWithPath: folder.path)
        #expect(throws: LayerKitError.file("\(folder.path): no .png, .jpg or .jpeg pictures to train on")) {
            try ImageFolderBatchProvider(folder: url, labels: [0], width: 2, height: 2, channels: 3)
        }
        for name in ["a.png", "b.png"] {
            try Self.png(folder.file(name), width: 2, height: 2, channels: 3) { _, _, _ in 9 }
        }
        #expect(throws: LayerKitError.shapeMismatch("3 labels for 2 pictures in \(folder.path): give one class index "
                                                    + "per picture, in file-name order")) {
            try ImageFolderBatchProvider(folder: url, labels: [0, 1, 0], width: 2, height: 2, channels: 3)
        }
        #expect(throws: LayerKitError.invalidParameter("label 10 of \(folder.file("b.png")) (item 1) is not a class of "
                                                       + "the model's 10 (0 to 9)")) {
            try ImageFolderBatchProvider(folder: url, labels: [0, 10], width: 2, height: 2, channels: 3, classes: 10)
        }
        // A picture with channels that cannot be fitted fails when read, naming it.
        let twoChannel = try ImageFolderBatchProvider(folder: url, labels: [0, 1], width: 2, height: 2, channels: 2)
        do {
            _ = try twoChannel.features(at: 0)
            Issue.record("3 channels were made 2")
        } catch let error as LayerKitError {
            #expect("\(error)".hasPrefix("\(folder.file("a.png")): an image of 3 colour channels cannot be made 2"))
        }
        #expect(throws: LayerKitError.self) {
            try ImageFolderBatchProvider(folder: URL(fileURLWithPath: folder.file("missing")), labels: [0],
                                         width: 2, height: 2, channels: 3)
        }
    }

    @Test func labelFilesAreTextOneALineOrNPYVectorsOfWholeNumbers() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try Data(" 3\n0\n\n  12  \n1".utf8).write(to: URL(fileURLWithPath: folder.file("labels.txt")))
        #expect(try ClassLabels.read(contentsOf: folder.file("labels.txt")) == [3, 0, 12, 1])
        try Tensor(shape: [3, 1], values: [2, 0, 5]).writeNPY(to: folder.file("labels.npy"))
        #expect(try ClassLabels.read(contentsOf: folder.file("labels.npy")) == [2, 0, 5])

        try Data("1\n2\ncat\n".utf8).write(to: URL(fileURLWithPath: folder.file("bad.txt")))
        #expect(throws: LayerKitError.file("\(folder.file("bad.txt")):3: 'cat' is not a class index (a whole number "
                                           + "from 0 to \(ClassLabels.maximumIndex), one a line)")) {
            try ClassLabels.read(contentsOf: folder.file("bad.txt"))
        }
        try Data("-1\n".utf8).write(to: URL(fileURLWithPath: folder.file("negative.txt")))
        #expect(throws: LayerKitError.self) { try ClassLabels.read(contentsOf: folder.file("negative.txt")) }
        try Data("\n\n".utf8).write(to: URL(fileURLWithPath: folder.file("empty.txt")))
        #expect(throws: LayerKitError.file("\(folder.file("empty.txt")): no labels (expected one class index per item)")) {
            try ClassLabels.read(contentsOf: folder.file("empty.txt"))
        }
        try Tensor(shape: [2], values: [1, 2.5]).writeNPY(to: folder.file("half.npy"))
        #expect(throws: LayerKitError.file("\(folder.file("half.npy")): label 1 is 2.5; expected a whole number from 0 "
                                           + "to \(ClassLabels.maximumIndex)")) {
            try ClassLabels.read(contentsOf: folder.file("half.npy"))
        }
        try Tensor(shape: [2, 2], values: [1, 2, 3, 4]).writeNPY(to: folder.file("matrix.npy"))
        #expect(throws: LayerKitError.self) { try ClassLabels.read(contentsOf: folder.file("matrix.npy")) }
    }
}
