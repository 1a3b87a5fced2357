/// How pixels (read as 0...1) become a model's input values, as in the
/// TensorFlow Lite and torchvision recipes.
public enum PixelNormalization: Sendable, Equatable {
    /// Pixels as read: 0...1.
    case unit
    /// `2p - 1`: -1...1 (TensorFlow Lite's mean 127.5, std 127.5 on 0...255).
    case signed
    /// `(p - mean[c]) / std[c]` per channel on 0...1 pixels (torchvision's
    /// ImageNet recipe is mean 0.485,0.456,0.406, std 0.229,0.224,0.225);
    /// one value applies to every channel.
    case meanStd(mean: [Float], std: [Float])
    /// torchvision's ImageNet recipe by colour: mean `imagenetMean`, std
    /// `imagenetStd` on R, G, B (`ImageInputOptions` follows the colours
    /// through a BGR order and scales them with its `scale`).
    case imagenet

    /// The ImageNet means of R, G and B on 0...1 pixels.
    public static let imagenetMean: [Float] = [0.485, 0.456, 0.406]
    /// The ImageNet standard deviations of R, G and B on 0...1 pixels.
    public static let imagenetStd: [Float] = [0.229, 0.224, 0.225]

    /// Parses `0,1`, `-1,1`, `imagenet` or `mean=A[,B,...],std=D[,E,...]`.
    public init(parsing text: String) throws {
        let compact = text.replacingOccurrences(of: " ", with: "")
        switch compact {
        case "0,1": self = .unit
        case "-1,1": self = .signed
        case "imagenet": self = .imagenet
        default:
            let syntax = "expected 0,1, -1,1, imagenet or mean=A[,B,C],std=D[,E,F]"
            guard compact.hasPrefix("mean="), let split = compact.range(of: ",std=") else {
                throw LayerKitError.invalidParameter("pixel normalization '\(text)': \(syntax)")
            }
            let numbers = { (part: Substring) -> [Float]? in
                let values = part.split(separator: ",", omittingEmptySubsequences: false).map { Float($0) }
                return values.isEmpty || values.contains(nil) ? nil : values.compactMap { $0 }
            }
            guard let mean = numbers(compact[compact.index(compact.startIndex, offsetBy: 5)..<split.lowerBound]),
                  let std = numbers(compact[split.upperBound...]) else {
                throw LayerKitError.invalidParameter("pixel normalization '\(text)': \(syntax)")
            }
            guard (mean + std).allSatisfy(\.isFinite), std.allSatisfy({ $0 != 0 }) else {
                throw LayerKitError.invalidParameter("pixel normalization '\(text)': values must be finite and std non-zero")
            }
            self = .meanStd(mean: mean, std: std)
        }
    }

    /// `channel`'s mean and std (of `channels`) from a `.meanStd`'s lists,
    /// one value or one per channel; throws naming `purpose`
    /// ("normalization", "denormalization") for other counts.
    static func meanStd(_ mean: [Float], _ std: [Float], channel: Int, of channels: Int,
                        purpose: String) throws -> (mean: Float, std: Float) {
        guard mean.count == 1 || mean.count == channels, std.count == 1 || std.count == channels else {
            throw LayerKitError.invalidParameter(
                "\(purpose) gives \(mean.count) means and \(std.count) stds for \(channels) channels")
        }
        return (mean[mean.count == 1 ? 0 : channel], std[std.count == 1 ? 0 : channel])
    }
}

extension Tensor {
    /// The NCHW image resized to `width`×`height` by bilinear interpolation
    /// with half-pixel centres (OpenCV's INTER_LINEAR, PIL's and TensorFlow 2's
    /// bilinear without antialiasing).
    public func resized(width: Int, height: Int) throws -> Tensor {
        let (n, c, h, w) = try nchw()
        guard width > 0, height > 0 else {
            throw LayerKitError.invalidParameter("resize to \(width)x\(height): sizes must be positive")
        }
        let output = try Tensor(shape: [n, c, height, width])
        // For each output column/row: the two source indices and the weight of the second.
        func taps(_ outSize: Int, _ inSize: Int) -> [(Int, Int, Float)] {
            let scale = Double(inSize) / Double(outSize)
            return (0..<outSize).map { o in
                let source = max(0, (Double(o) + 0.5) * scale - 0.5)
                let low = min(Int(source), inSize - 1)
                return (low, min(low + 1, inSize - 1), Float(source - Double(low)))
            }
        }
        let columns = taps(width, w), rows = taps(height, h)
        for plane in 0..<n * c {
            let source = dataPointer + plane * h * w
            let target = output.dataPointer + plane * height * width
            for (y, row) in rows.enumerated() {
                let top = source + row.0 * w, bottom = source + row.1 * w
                for (x, column) in columns.enumerated() {
                    let upper = top[column.0] + (top[column.1] - top[column.0]) * column.2
                    let lower = bottom[column.0] + (bottom[column.1] - bottom[column.0]) * column.2
                    target[y * width + x] = upper + (lower - upper) * row.2
                }
            }
        }
        return output
    }

    /// The NCHW image with `channels` colour channels, as an RGB model takes
    /// a gray or RGBA picture: gray (1 channel) repeated into every channel,
    /// RGBA (4) losing its alpha for 3; the image itself when it already has
    /// `channels`. Any other pair throws `LayerKitError.shapeMismatch`.
    public func fittingChannels(_ channels: Int) throws -> Tensor {
        let (n, c, h, w) = try nchw()
        guard c != channels else { return self }
        let sources: [Int]
        switch (c, channels) {
        case (1, 1...): sources = Array(repeating: 0, count: channels)
        case (4, 3): sources = [0, 1, 2]
        default:
            throw LayerKitError.shapeMismatch("an image of \(c) colour channels cannot be made \(channels) "
                                              + "(gray becomes any count, RGBA becomes RGB)")
        }
        let plane = h * w
        let fitted = try Tensor(shape: [n, channels, h, w])
        for item in 0..<n {
            for (channel, source) in sources.enumerated() {
                (fitted.dataPointer + (item * channels + channel) * plane)
                    .update(from: dataPointer + (item * c + source) * plane, count: plane)
            }
        }
        return fitted
    }

    /// The NCHW image with `normalization` undone: model values back to
    /// 0...1 pixels (`x * std + mean`), for an image-to-image model's
    /// output. Nothing is clamped here.
    public func denormalized(_ normalization: PixelNormalization) throws -> Tensor {
        try scaledPerChannel { channel, channels in
            switch normalization {
            case .unit: return (1, 0)
            case .signed: return (0.5, 0.5)
            case .meanStd(let mean, let std):
                let (m, s) = try PixelNormalization.meanStd(mean, std, channel: channel, of: channels,
                                                            purpose: "denormalization")
                return (s, m)
            case .imagenet:
                let (m, s) = try PixelNormalization.meanStd(PixelNormalization.imagenetMean, PixelNormalization.imagenetStd,
                                                            channel: channel, of: channels, purpose: "denormalization")
                return (s, m)
            }
        }
    }

    /// The NCHW image with `normalization` applied to every channel.
    public func normalized(_ normalization: PixelNormalization) throws -> Tensor {
        try scaledPerChannel { channel, channels in
            switch normalization {
            case .unit: return (1, 0)
            case .signed: return (2, -1)
            case .meanStd(let mean, let std):
                let (m, s) = try PixelNormalization.meanStd(mean, std, channel: channel, of: channels,
                                                            purpose: "normalization")
                return (1 / s, -m / s)
            case .imagenet:
                let (m, s) = try PixelNormalization.meanStd(PixelNormalization.imagenetMean, PixelNormalization.imagenetStd,
                                                            channel: channel, of: channels, purpose: "normalization")
                return (1 / s, -m / s)
            }
        }
    }

    /// A copy of the NCHW image with every plane mapped by `x * scale +
    /// offset`, its channel's pair from `coefficients(channel, channels)`
    /// (asked once per item and channel): `normalized` and `denormalized`.
    private func scaledPerChannel(
        _ coefficients: (_ channel: Int, _ channels: Int) throws -> (scale: Float, offset: Float)
    ) throws -> Tensor {
        let (n, c, h, w) = try nchw()
        let result = try reshaped(to: shape)
        let plane = h * w
        for item in 0..<n {
            for channel in 0..<c {
                let (scale, offset) = try coefficients(channel, c)
                let base = result.dataPointer + (item * c + channel) * plane
                for i in 0..<plane { base[i] = base[i] * scale + offset }
            }
        }
        return result
    }
}
