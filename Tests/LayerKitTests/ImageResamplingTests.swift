import Foundation
import Testing
@testable import LayerKit

/// `ImageInputOptions` against Pillow and numpy (Scripts/generate_resampling_fixtures.py):
/// each interpolation shrinking and enlarging, with a centre crop, and
/// torchvision's Resize(256), CenterCrop(224), ToTensor, Normalize, all
/// within 2/255 of a pixel.
@Suite struct ImageResamplingTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/resampling")
    static func fixture(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The largest difference between two tensors of one shape.
    static func maxDifference(_ a: Tensor, _ b: Tensor) -> Float {
        guard a.shape == b.shape else { return .infinity }
        return zip(a.values, b.values).map { abs($0 - $1) }.max() ?? 0
    }

    @Test(arguments: ImageInterpolation.allCases)
    func shrinkingAndEnlargingMatchPillow(_ interpolation: ImageInterpolation) throws {
        for (side, crop, name) in [(20, ImageInputOptions.Size(width: 18, height: 16), "down"),
                                   (72, ImageInputOptions.Size(width: 40, height: 36), "up")] {
            let options = ImageInputOptions(resize: .shorterSide(side), centerCrop: crop, interpolation: interpolation)
            let ours = try options.load(Self.fixture("photo.png"))
            let pillow = try Tensor(npyFile: Self.fixture("\(interpolation.rawValue)_\(name).npy"))
            let worst = Self.maxDifference(ours, pillow)
            #expect(worst <= 2 / 255, "\(interpolation) \(name): max difference \(worst * 255)/255 from Pillow")
        }
    }

    /// Without antialiasing, shrinking 61x47 to 26x20 would miss Pillow by far more than 2/255: the test can fail.
    @Test func theOldStretchDoesNotPassForShrinking() throws {
        let picture = try Tensor(pngFile: Self.fixture("photo.png"))
        let options = ImageInputOptions(resize: .shorterSide(20), centerCrop: .init(width: 18, height: 16))
        let plain = try options.finish(try picture.resized(width: 25, height: 20).centerCropped(.init(width: 18, height: 16)))
        #expect(Self.maxDifference(plain, try Tensor(npyFile: Self.fixture("bilinear_down.npy"))) > 10 / 255)
    }

    @Test func torchvisionClassificationRecipe() throws {
        let options = ImageInputOptions(resize: .shorterSide(256), centerCrop: .init(width: 224, height: 224),
                                        normalization: .imagenet)
        let ours = try options.load(Self.fixture("photo.jpg"))
        #expect(ours.shape == [1, 3, 224, 224])
        let reference = try Tensor(npyFile: Self.fixture("imagenet_224.npy"))
        let sampled = try Self.everyFourth(ours, channelsLast: false)
        // 2/255 of a pixel, in normalized units (divided by the smallest std).
        let worst = Self.maxDifference(sampled, reference)
        #expect(worst <= 2 / 255 / 0.224, "max difference \(worst) from torchvision's recipe")
    }

    @Test func nearestBGR255ChannelsLast() throws {
        let options = ImageInputOptions(resize: .shorterSide(256), centerCrop: .init(width: 224, height: 224),
                                        interpolation: .nearest, normalization: .imagenet, channelOrder: .bgr,
                                        scale: 255, layout: .nhwc)
        let ours = try options.load(Self.fixture("photo.jpg"))
        #expect(ours.shape == [1, 224, 224, 3])
        let reference = try Tensor(npyFile: Self.fixture("imagenet_224_nearest_channels_last_bgr_255.npy"))
        let worst = Self.maxDifference(try Self.everyFourth(ours, channelsLast: true), reference)
        #expect(worst <= 2 / 255 / 0.224, "max difference \(worst)")
    }

    @Test func centerCropRoundsHalvesToEvenAndRefusesALargerCrop() throws {
        // A 5-wide row cropped to 2: (5 - 2) / 2 = 1.5 rounds to 2, as Python's round.
        let row = try Tensor(shape: [1, 1, 1, 5], values: [0, 1, 2, 3, 4])
        #expect(try row.centerCropped(.init(width: 2, height: 1)).values == [2, 3])
        let odd = try Tensor(shape: [1, 1, 1, 4], values: [0, 1, 2, 3])
        #expect(try odd.centerCropped(.init(width: 1, height: 1)).values == [2])  // 1.5 → 2
        #expect(try Tensor(shape: [1, 1, 1, 6], values: [0, 1, 2, 3, 4, 5]).centerCropped(.init(width: 1, height: 1)).values == [2])  // 2.5 → 2
        #expect(throws: LayerKitError.self) { try row.centerCropped(.init(width: 6, height: 1)) }
    }

    @Test func parsingRefusesBadValues() throws {
        #expect(try ImageInputOptions.Resize(parsing: "256") == .shorterSide(256))
        #expect(try ImageInputOptions.Resize(parsing: "320x240") == .stretch(.init(width: 320, height: 240)))
        for bad in ["", "0", "x", "3x", "-2", "1x2x3", "99999"] {
            #expect(throws: LayerKitError.self, "\(bad)") { try ImageInputOptions.Resize(parsing: bad) }
        }
        #expect(try PixelNormalization(parsing: "imagenet") == .imagenet)
        for bad in ["0", "-1", "nan", "inf", "x"] {
            #expect(throws: LayerKitError.self, "\(bad)") { try ImageInputOptions.scale(parsing: bad) }
        }
    }

    /// Every fourth row and column of a 224x224 image, as the references keep them.
    static func everyFourth(_ tensor: Tensor, channelsLast: Bool) throws -> Tensor {
        let (c, h, w) = channelsLast ? (tensor.shape[3], tensor.shape[1], tensor.shape[2])
            : (tensor.shape[1], tensor.shape[2], tensor.shape[3])
        var values: [Float] = []
        if channelsLast {
            for y in stride(from: 0, to: h, by: 4) {
                for x in stride(from: 0, to: w, by: 4) { for k in 0..<c { values.append(tensor[(y * w + x) * c + k]) } }
            }
            return try Tensor(shape: [1, (h + 3) / 4, (w + 3) / 4, c], values: values)
        }
        for k in 0..<c {
            for y in stride(from: 0, to: h, by: 4) {
                for x in stride(from: 0, to: w, by: 4) { values.append(tensor[(k * h + y) * w + x]) }
            }
        }
        return try Tensor(shape: [1, c, (h + 3) / 4, (w + 3) / 4], values: values)
    }
}
