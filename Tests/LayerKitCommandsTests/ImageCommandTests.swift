import Foundation
import LayerKit
import Testing
@testable import LayerKitCommands

/// `layerkit run` with picture outputs (`.png`: 1, 3 or 4 channels,
/// normalization undone) and activation grids (`--output-grid`), JPEG
/// inputs, and `layerkit demo --style`.
struct ImageCommandTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("LayerKitTests/Fixtures")

    static func fixture(_ name: String) -> String { fixtures.appendingPathComponent(name).path }

    /// A seeded 1x3x6x8 RGB picture written as PNG, with its pixels.
    static func photo(in directory: String) throws -> (path: String, pixels: Tensor) {
        let levels = try Tensor.uniform(shape: [1, 3, 6, 8], in: 0...1, seed: 5)
        let pixels = try Tensor(shape: levels.shape, values: levels.values.map { ($0 * 255).rounded() / 255 })
        let path = "\(directory)/photo.png"
        try pixels.writeImagePNG(to: path)
        return (path, pixels)
    }

    @Test(arguments: [[], ["--normalize", "-1,1"], ["--normalize", "mean=0.485,0.456,0.406,std=0.229,0.224,0.225"]])
    func aPNGOutputIsThePictureWithTheNormalizationUndone(_ options: [String]) throws {
        let directory = try CommandRunner.scratchDirectory()
        let (photo, pixels) = try Self.photo(in: directory)
        let runner = CommandRunner()
        // Relu of the normalized input: the picture itself where values are positive.
        #expect(runner.run(["run", Self.fixture("style/identity_relu.onnx"), "--input", photo, "--output",
                            "\(directory)/out.png", "--backend", "cpu"] + options) == 0, "\(runner.error)")
        #expect(runner.out.contains("wrote \(directory)/out.png"))
        let out = try Tensor(pngFile: "\(directory)/out.png")
        #expect(out.shape == [1, 3, 6, 8])
        let normalization = try PixelNormalization(parsing: options.last ?? "0,1")
        let expected = try pixels.normalized(normalization).values.map { max(0, $0) }
        let picture = try Tensor(shape: pixels.shape, values: expected).denormalized(normalization)
        for i in 0..<out.count {
            let level = (min(1, max(0, picture[i])) * 255).rounded() / 255
            #expect(abs(out[i] - level) <= 1.0 / 255 + 1e-6, "sample \(i)")
        }
    }

    @Test func denormalizeOverridesTheInputsNormalization() throws {
        let directory = try CommandRunner.scratchDirectory()
        let (photo, pixels) = try Self.photo(in: directory)
        let runner = CommandRunner()
        // Input 0..1 as read; output read as -1..1: pixels (x + 1) / 2.
        #expect(runner.run(["run", Self.fixture("style/identity_relu.onnx"), "--input", photo, "--denormalize", "-1,1",
                            "--output", "\(directory)/out.png", "--backend", "cpu"]) == 0, "\(runner.error)")
        let out = try Tensor(pngFile: "\(directory)/out.png")
        for i in 0..<out.count {
            #expect(abs(out[i] - ((pixels[i] + 1) / 2 * 255).rounded() / 255) <= 1.0 / 255 + 1e-6)
        }
        let bad = CommandRunner()
        #expect(bad.run(["run", Self.fixture("style/identity_relu.onnx"), "--input", photo, "--denormalize", "0,2",
                         "--output", "\(directory)/x.png"]) == 2)
        #expect(bad.error.contains("--denormalize"), "\(bad.error)")
    }

    @Test func otherChannelCountsAreAnErrorSuggestingNPYAndTheGridStays() throws {
        let directory = try CommandRunner.scratchDirectory()
        let (photo, _) = try Self.photo(in: directory)
        let runner = CommandRunner()
        #expect(runner.run(["run", Self.fixture("style/two_channels.onnx"), "--input", photo, "--output",
                            "\(directory)/out.png", "--backend", "cpu"]) == 1)
        #expect(runner.error.contains("2 channels") && runner.error.contains(".npy"), "\(runner.error)")
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/out.png"))
        // The activation grid draws any channel count: two 8x6 tiles side by side.
        let grid = CommandRunner()
        #expect(grid.run(["run", Self.fixture("style/two_channels.onnx"), "--input", photo, "--output-grid",
                          "\(directory)/grid.png", "--output", "\(directory)/out.npy", "--backend", "cpu"]) == 0,
                "\(grid.error)")
        #expect(grid.out.contains("wrote \(directory)/grid.png (activation grid)"))
        #expect(try Tensor(pngFile: "\(directory)/grid.png").shape == [1, 1, 6, 17])
        #expect(try Tensor(npyFile: "\(directory)/out.npy").shape == [1, 2, 6, 8])
        let npy = CommandRunner()
        #expect(npy.run(["run", Self.fixture("style/two_channels.onnx"), "--input", photo, "--output-grid",
                         "\(directory)/grid.npy"]) == 2)
        #expect(npy.error.contains("--output-grid draws a .png"), "\(npy.error)")
    }

    @Test func runsOnAJPEGInput() throws {
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        #expect(runner.run(["run", Self.fixture("style/identity_relu.onnx"), "--input", Self.fixture("jpeg/rgb_444.jpg"),
                            "--output", "\(directory)/out.npy", "--backend", "cpu"]) == 0, "\(runner.error)")
        let out = try Tensor(npyFile: "\(directory)/out.npy")
        let reference = try Tensor(npyFile: Self.fixture("jpeg/rgb_444.npy"))
        #expect(out.shape == [1, 3, 12, 16] && out.values == reference.values)
        // A gray JPEG is repeated into the 3 channels, with a notice.
        let gray = CommandRunner()
        #expect(gray.run(["run", Self.fixture("style/identity_relu.onnx"), "--input", Self.fixture("jpeg/gray.jpg"),
                          "--backend", "cpu"]) == 0, "\(gray.error)")
        #expect(gray.error.contains("gray.jpg is gray"), "\(gray.error)")
        let corrupt = CommandRunner()
        #expect(corrupt.run(["run", Self.fixture("style/identity_relu.onnx"), "--input", Self.fixture("jpeg/truncated.jpg"),
                             "--backend", "cpu"]) == 1)
        #expect(corrupt.error.contains("cannot read JPEG"), "\(corrupt.error)")
    }

    /// The script that made the style reference drew the same image.
    @Test func theStyleReferenceWasMadeOnTheDemoImage() throws {
        let drawn = try #require(try ModelParity.rounded(["image": DemoImage.landscape(size: 96)])["image"])
        let scripted = try Tensor(npyFile: Self.fixture("style/demo_input.npy"))
        #expect(drawn.shape == scripted.shape)
        let differing = (0..<min(drawn.count, scripted.count)).filter { drawn[$0] != scripted[$0] }
        #expect(differing.isEmpty, "\(differing.count) samples differ, first at \(differing.first ?? -1)")
    }

    @Test
    func demoStyleWritesThePictureOnBothBackends() throws {
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        #expect(runner.run(["demo", "--style", "--output", "\(directory)/styled.png"]) == 0, "\(runner.out)\(runner.error)")
        #expect(runner.out.contains("parity: PASS"), "\(runner.out)")
        #expect(runner.out.contains("to \(directory)/styled.png"))
        let picture = try Tensor(pngFile: "\(directory)/styled.png")
        #expect(picture.shape == [1, 3, 96, 96])
        #expect(runner.out.contains("seeded, not trained"))
        let sideBySide = try Tensor(pngFile: "\(directory)/styled-side-by-side.png")
        #expect(sideBySide.shape == [1, 3, 96, 2 * 96 + 4])
        #expect(sideBySide[96 * 196 - 1] == picture[96 * 96 - 1], "the output is the right half")
        // onnxruntime's output on the same image, as 8-bit levels.
        let reference = try Tensor(npyFile: Self.fixture("style/demo_output.npy"))
        var worst: Float = 0
        for i in 0..<reference.count { worst = max(worst, abs(picture[i] - (reference[i] * 255).rounded() / 255)) }
        #expect(worst <= 1.0 / 255 + 1e-6, "a pixel differs from onnxruntime's by \(worst * 255) levels")
        let wrong = CommandRunner()
        #expect(wrong.run(["demo", "--style", "--output", "\(directory)/styled.npy"]) == 2)
        #expect(wrong.error.contains(".png"))
    }
}
