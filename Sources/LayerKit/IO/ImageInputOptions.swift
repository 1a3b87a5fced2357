import Foundation

/// How a PNG or JPEG picture becomes a model's input, the steps of
/// torchvision's `Resize`, `CenterCrop`, `ToTensor`, `Normalize` and of the
/// Keras/TensorFlow Lite recipes, in this order:
///
/// 1. decode to RGB (or gray, RGBA) pixels in 0...1;
/// 2. `resize`: the shorter side to N keeping the aspect ratio (the longer
///    side `floor(N * long / short)`, as torchvision), or stretch to W×H, by
///    `interpolation` as Pillow's `Image.resize` (antialiased when shrinking);
/// 3. `centerCrop`: the middle W×H, its offset `round((size - crop) / 2)`
///    with halves to even (Python's `round`, as torchvision);
/// 4. the channels fitted to the model's count when asked (gray repeated,
///    alpha dropped);
/// 5. every value times `scale` (1: pixels 0...1; 255: 0...255);
/// 6. `channelOrder`: `.bgr` reverses the three colour channels;
/// 7. `normalization`: `(x - mean[c]) / std[c]` in the model's channel
///    order and `scale`'s units; the presets scale with it (`-1,1` is mean
///    and std `scale / 2`; `imagenet` is torchvision's per-colour values
///    times `scale`, following the colours through `.bgr`);
/// 8. `layout`: NCHW, or NHWC (channels last, as TensorFlow Lite and Keras).
public struct ImageInputOptions: Sendable, Equatable {
    /// A width and a height in pixels.
    public struct Size: Sendable, Equatable {
        public let width: Int
        public let height: Int

        public init(width: Int, height: Int) {
            (self.width, self.height) = (width, height)
        }

        /// Parses `N` (square) or `WxH`, each 1 to 16384; `option` names
        /// the setting in the error.
        public init(parsing text: String, option: String) throws {
            let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false).map { Int($0) }
            guard (1...2).contains(parts.count), parts.allSatisfy({ (1...16384).contains($0 ?? 0) }),
                  let width = parts.first ?? nil, let height = parts.last ?? nil else {
                throw LayerKitError.invalidParameter("\(option) \(text): expected N or WIDTHxHEIGHT, each 1 to 16384, "
                                                     + "e.g. 256 or 224x224")
            }
            self.init(width: width, height: height)
        }
    }

    /// What `resize` does.
    public enum Resize: Sendable, Equatable {
        /// The shorter side to this many pixels, the aspect ratio kept (torchvision's `Resize(N)`).
        case shorterSide(Int)
        /// Exactly this size, stretching (torchvision's `Resize((H, W))`).
        case stretch(Size)

        /// Parses `N` (shorter side) or `WxH` (stretch); `option` names
        /// the setting in the error.
        public init(parsing text: String, option: String = "resize") throws {
            let size = try Size(parsing: text, option: option)
            self = text.lowercased().contains("x") ? .stretch(size) : .shorterSide(size.width)
        }
    }

    /// The order of the colour channels the model takes.
    public enum ChannelOrder: String, Sendable, CaseIterable {
        case rgb, bgr
    }

    /// Where the channel axis is.
    public enum Layout: String, Sendable, CaseIterable {
        /// 1xCxHxW (ONNX, PyTorch).
        case nchw
        /// 1xHxWxC (TensorFlow Lite, Keras).
        case nhwc
    }

    public var resize: Resize?
    public var centerCrop: Size?
    public var interpolation: ImageInterpolation
    public var normalization: PixelNormalization
    public var channelOrder: ChannelOrder
    /// What a full-intensity pixel becomes before normalization: 1 or 255, say.
    public var scale: Float
    public var layout: Layout

    public init(resize: Resize? = nil, centerCrop: Size? = nil, interpolation: ImageInterpolation = .bilinear,
                normalization: PixelNormalization = .unit, channelOrder: ChannelOrder = .rgb, scale: Float = 1,
                layout: Layout = .nchw) {
        (self.resize, self.centerCrop, self.interpolation) = (resize, centerCrop, interpolation)
        (self.normalization, self.channelOrder, self.scale, self.layout) = (normalization, channelOrder, scale, layout)
    }

    /// Parses a `scale` setting: a finite positive number (1, 255).
    public static func scale(parsing text: String) throws -> Float {
        guard let value = Float(text.trimmingCharacters(in: .whitespaces)), value.isFinite, value > 0 else {
            throw LayerKitError.invalidParameter("scale \(text): expected a positive number, e.g. 255")
        }
        return value
    }

    /// Reads the PNG or JPEG file at `path` and prepares it (`prepare`).
    public func load(_ path: String, channels: Int? = nil) throws -> Tensor {
        let lowered = path.lowercased()
        let image: Tensor
        if lowered.hasSuffix(".png") {
            image = try Tensor(pngFile: path)
        } else if lowered.hasSuffix(".jpg") || lowered.hasSuffix(".jpeg") {
            image = try Tensor(jpegFile: path)
        } else {
            throw LayerKitError.unsupported("\(path): not a picture (expected .png, .jpg or .jpeg)")
        }
        return try prepare(image, channels: channels)
    }

    /// The decoded NCHW picture (values 0...1) through every step:
    /// `geometry`, then `finish`.
    public func prepare(_ image: Tensor, channels: Int? = nil) throws -> Tensor {
        try finish(try geometry(image), channels: channels)
    }

    /// Steps 4 to 8 on a resized and cropped NCHW picture: with `channels`
    /// colour channels when given (`Tensor.fittingChannels`), scaled,
    /// ordered and normalized (`values`), in `layout`.
    public func finish(_ image: Tensor, channels: Int? = nil) throws -> Tensor {
        let fitted = try channels.map { try image.fittingChannels($0) } ?? image
        let tensor = try values(fitted)
        return layout == .nhwc ? try tensor.channelsLast() : tensor
    }

    /// Steps 2 and 3: the NCHW picture resized and centre-cropped.
    public func geometry(_ image: Tensor) throws -> Tensor {
        var tensor = image
        let (_, _, h, w) = try tensor.nchw()
        switch resize {
        case nil: break
        case .stretch(let size)?:
            tensor = try tensor.resampled(width: size.width, height: size.height, interpolation: interpolation)
        case .shorterSide(let side)?:
            let (short, long) = (min(w, h), max(w, h))
            let longSide = Int(Double(side) * Double(long) / Double(short))
            tensor = try w <= h ? tensor.resampled(width: side, height: longSide, interpolation: interpolation)
                : tensor.resampled(width: longSide, height: side, interpolation: interpolation)
        }
        guard let crop = centerCrop else { return tensor }
        return try tensor.centerCropped(crop)
    }

    /// Steps 5 to 7 on an NCHW picture of 0...1 values: scaled, its colours
    /// ordered, normalized.
    public func values(_ image: Tensor) throws -> Tensor {
        let (n, c, h, w) = try image.nchw()
        if channelOrder == .bgr, c < 3 {
            throw LayerKitError.invalidParameter("channel order bgr needs 3 colour channels; the picture has \(c)")
        }
        // Channel k of the result comes from `sources[k]`: BGR reverses the colours, keeping alpha.
        let sources = channelOrder == .bgr ? [2, 1, 0] + Array(3..<c) : Array(0..<c)
        let result = try Tensor(shape: [n, c, h, w])
        let plane = h * w
        for channel in 0..<c {
            let (mean, std) = try coefficients(channel: channel, of: c)
            for item in 0..<n {
                let source = image.dataPointer + (item * c + sources[channel]) * plane
                let target = result.dataPointer + (item * c + channel) * plane
                for i in 0..<plane { target[i] = (source[i] * scale - mean) / std }
            }
        }
        return result
    }

    /// Channel `channel`'s mean and std (of `channels`, in the model's
    /// order) in `scale`'s units.
    func coefficients(channel: Int, of channels: Int) throws -> (mean: Float, std: Float) {
        switch normalization {
        case .unit: return (0, 1)
        case .signed: return (scale / 2, scale / 2)
        case .imagenet:
            guard channels == 3 else {
                throw LayerKitError.invalidParameter("normalization imagenet is for RGB pictures; this one has \(channels) channels")
            }
            let colour = channelOrder == .bgr ? 2 - channel : channel
            return (PixelNormalization.imagenetMean[colour] * scale, PixelNormalization.imagenetStd[colour] * scale)
        case .meanStd(let mean, let std):
            return try PixelNormalization.meanStd(mean, std, channel: channel, of: channels, purpose: "normalization")
        }
    }
}

extension Tensor {
    /// The middle `size` of the NCHW image, its top-left corner at
    /// `round((height - crop height) / 2)`, `round((width - crop width) / 2)`
    /// with halves rounded to even, as torchvision's `CenterCrop`. A crop
    /// larger than the image throws.
    public func centerCropped(_ size: ImageInputOptions.Size) throws -> Tensor {
        let (n, c, h, w) = try nchw()
        guard size.width <= w, size.height <= h else {
            throw LayerKitError.invalidParameter("center crop \(size.width)x\(size.height) is larger than the "
                                                 + "\(w)x\(h) picture (resize it first)")
        }
        let top = Int((Double(h - size.height) / 2).rounded(.toNearestOrEven))
        let left = Int((Double(w - size.width) / 2).rounded(.toNearestOrEven))
        let output = try Tensor(shape: [n, c, size.height, size.width])
        for plane in 0..<n * c {
            for y in 0..<size.height {
                (output.dataPointer + (plane * size.height + y) * size.width)
                    .update(from: dataPointer + (plane * h + top + y) * w + left, count: size.width)
            }
        }
        return output
    }

    /// The NCHW tensor as NHWC: channels last.
    public func channelsLast() throws -> Tensor {
        let (n, c, h, w) = try nchw()
        let output = try Tensor(shape: [n, h, w, c])
        for item in 0..<n {
            for channel in 0..<c {
                let source = dataPointer + (item * c + channel) * h * w
                let target = output.dataPointer + item * h * w * c + channel
                for i in 0..<h * w { target[i * c] = source[i] }
            }
        }
        return output
    }
}
