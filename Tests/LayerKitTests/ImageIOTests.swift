import Foundation
import Testing
@testable import LayerKit

/// JPEG reading against Pillow's pixels (`Scripts/generate_jpeg_fixtures.py`),
/// PNG pictures written from image tensors, and undoing a normalization.
@Suite struct JPEGReadingTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/jpeg")

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    @Test(arguments: ["rgb_420", "rgb_444", "progressive", "gray", "odd_422"])
    func decodesThePixelsPillowDecodes(_ name: String) throws {
        let image = try Tensor(jpegFile: Self.path(name + ".jpg"))
        let reference = try Tensor(npyFile: Self.path(name + ".npy"))
        #expect(image.shape == reference.shape)
        guard image.shape == reference.shape else { return }
        var differing = 0, worst: Float = 0
        for i in 0..<reference.count where image[i] != reference[i] {
            differing += 1
            worst = max(worst, abs(image[i] - reference[i]))
        }
        // Pillow and this build use the same libjpeg-turbo algorithms (accurate DCT, smooth upsampling).
        #expect(differing == 0, "\(name): \(differing) of \(reference.count) samples differ, by up to \(worst * 255) levels")
    }

    @Test func aGrayJPEGIsOneChannel() throws {
        #expect(try Tensor(jpegFile: Self.path("gray.jpg")).shape == [1, 1, 12, 16])
        #expect(try Tensor(jpegFile: Self.path("odd_422.jpg")).shape == [1, 3, 11, 15])
    }

    @Test(arguments: [("cmyk.jpg", "CMYK and YCCK JPEGs are not supported"),
                      ("truncated.jpg", "Premature end of JPEG file"),
                      ("zero_size.jpg", "cannot read JPEG")])
    func refusesWhatItCannotDecodeWithAReason(_ file: String, _ reason: String) {
        do {
            _ = try Tensor(jpegFile: Self.path(file))
            Issue.record("\(file) was decoded")
        } catch LayerKitError.file(let message) {
            #expect(message.contains(reason) && message.contains(file), "\(message)")
        } catch {
            Issue.record("\(file): \(error)")
        }
    }

    @Test func refusesAFileThatIsNoJPEG() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("x.jpg")
        try Data("GIF89a".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: LayerKitError.file("cannot read JPEG '\(path)': not a JPEG file (no start-of-image marker)")) {
            try Tensor(jpegFile: path)
        }
        let empty = directory.file("empty.jpg")
        try Data().write(to: URL(fileURLWithPath: empty))
        #expect(throws: LayerKitError.self) { try Tensor(jpegFile: empty) }
    }

    /// A header claiming 65500x65500 pixels is refused before anything is
    /// allocated for it.
    @Test func refusesHugeDimensionsFromTheHeader() throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.path("rgb_444.jpg"))))
        let sof = try #require((0..<bytes.count - 1).first { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xC0 })
        bytes.replaceSubrange(sof + 5..<sof + 9, with: [0xFF, 0xDC, 0xFF, 0xDC])
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("huge.jpg")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        do {
            _ = try Tensor(jpegFile: path)
            Issue.record("a 65500x65500 header was decoded")
        } catch {
            #expect("\(error)".contains("image is 65500x65500"), "\(error)")
        }
    }
}

@Suite struct PNGPictureWritingTests {
    @Test(arguments: [1, 3, 4]) func writesGrayRGBAndRGBA(_ channels: Int) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (h, w) = (3, 5)
        var values = (0..<channels * h * w).map { Float($0) / Float(channels * h * w - 1) * 1.4 - 0.2 }  // -0.2...1.2
        values[1] = .nan
        let tensor = try Tensor(shape: [1, channels, h, w], values: values)
        let path = directory.file("p.png")
        try tensor.writeImagePNG(to: path)
        let back = try Tensor(pngFile: path)
        #expect(back.shape == [1, channels, h, w])
        for i in 0..<values.count {
            let expected = values[i].isNaN ? 0 : (min(1, max(0, values[i])) * 255).rounded() / 255
            #expect(back[i] == expected, "sample \(i): \(values[i]) read back as \(back[i])")
        }
    }

    @Test func refusesOtherChannelCountsNamingNPY() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for shape in [[1, 2, 4, 4], [2, 3, 4, 4], [1, 5, 2, 2], [3, 4]] {
            do {
                try Tensor(shape: shape).writeImagePNG(to: directory.file("x.png"))
                Issue.record("\(shape) was written")
            } catch LayerKitError.unsupported(let message) {
                #expect(message.contains(".npy"), "\(message)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: directory.file("x.png")))
    }

    @Test func denormalizingUndoesNormalizing() throws {
        let image = try Tensor.uniform(shape: [1, 3, 4, 6], in: 0...1, seed: 3)
        for normalization in [PixelNormalization.unit, .signed,
                              .meanStd(mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225]),
                              .meanStd(mean: [0.5], std: [0.25])] {
            let back = try image.normalized(normalization).denormalized(normalization)
            for i in 0..<image.count { #expect(abs(back[i] - image[i]) <= 1e-6, "\(normalization)") }
        }
        #expect(throws: LayerKitError.self) {
            try image.denormalized(.meanStd(mean: [0, 0], std: [1, 1]))
        }
    }
}
