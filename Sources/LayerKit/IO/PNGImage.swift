import CPNG

/// Reading PNG images into tensors and drawing tensors as PNG pictures.
/// libpng does the coding, behind the small C API of the CPNG module.
extension Tensor {
    /// Reads the PNG file at `path` as a 1xCxHxW tensor, planar (NCHW), with
    /// samples scaled to 0...1 (divided by 255, or by 65535 for 16-bit files).
    ///
    /// C follows the colour type: gray gives 1 channel; RGB and palette give
    /// 3; RGBA, gray+alpha and any image with a tRNS transparency chunk give
    /// 4 (RGBA, gray copied to R, G and B). Images over 16384 pixels a side
    /// or 2^26 pixels are refused. Throws `LayerKitError.file` if the file
    /// cannot be read or decoded.
    public convenience init(pngFile path: String) throws {
        var image = lk_png_image()
        let descriptor = try RegularFile.open(path)  // lk_png_read closes it
        if let message = cMessageOnFailure({ lk_png_read(descriptor, &image, $0, $1) }) {
            throw LayerKitError.file("cannot read PNG '\(path)': \(message)")
        }
        defer { lk_png_free(&image) }
        guard let samples = image.samples else {
            throw LayerKitError.file("cannot read PNG '\(path)': decoder returned no pixels")
        }
        let (channels, height, width) = (Int(image.channels), Int(image.height), Int(image.width))
        try self.init(shape: [1, channels, height, width])
        if image.bit_depth == 16 {
            fillPlanes(from: samples.assumingMemoryBound(to: UInt16.self), channels: channels, maxValue: 65535)
        } else {
            fillPlanes(from: samples.assumingMemoryBound(to: UInt8.self), channels: channels, maxValue: 255)
        }
    }

    /// Copies interleaved samples into the channel planes, scaled to 0...1.
    private func fillPlanes<Sample: BinaryInteger>(from samples: UnsafePointer<Sample>,
                                                   channels: Int, maxValue: Float) {
        let planeSize = count / channels
        for pixel in 0..<planeSize {
            for channel in 0..<channels {
                dataPointer[channel * planeSize + pixel] = Float(samples[pixel * channels + channel]) / maxValue
            }
        }
    }

    /// Draws every channel of the tensor as a grayscale tile and writes the
    /// picture to `path` as an 8-bit gray PNG: an activation-map overview.
    ///
    /// The tensor is read as NxCxHxW (`nchw()`). Each batch item's C tiles
    /// fill rows of `ceil(sqrt(C))` columns; batch items are stacked
    /// downwards. Tiles are separated by 1-pixel mid-gray (128) lines, which
    /// also fill unused grid cells. Values map linearly from the global
    /// minimum (0) to maximum (255) of the finite values; NaN draws as 0,
    /// +infinity as 255, -infinity as 0, and a constant tensor as 128.
    ///
    /// The file is written unnamed and put in place whole, so a
    /// failed write leaves `path` untouched. Throws for an empty tensor, a
    /// rank above 4, a picture over 16384 pixels a side or 2^26 pixels, or a
    /// file that cannot be written.
    public func writeActivationPNG(to path: String) throws {
        let (n, c, h, w) = try nchw()
        guard count > 0 else {
            throw LayerKitError.shapeMismatch("cannot draw an empty tensor of shape \(Tensor.describe(shape))")
        }
        var columns = Int(Double(c).squareRoot())
        while columns * columns < c { columns += 1 }  // exact ceil(sqrt(C))
        let rowsPerItem = (c + columns - 1) / columns
        // Cannot overflow: every factor is at most `count`, itself far below Int.max.
        let width = columns * (w + 1) - 1
        let height = n * rowsPerItem * (h + 1) - 1
        guard width <= LK_PNG_MAX_SIDE, height <= LK_PNG_MAX_SIDE, width * height <= LK_PNG_MAX_PIXELS else {
            throw LayerKitError.unsupported(
                "shape \(Tensor.describe(shape)) would draw a \(width)x\(height) picture; the limit is \(LK_PNG_MAX_SIDE) pixels a side and \(LK_PNG_MAX_PIXELS) in all")
        }

        let level = grayLevels()
        var pixels = [UInt8](repeating: 128, count: width * height)
        for item in 0..<n {
            for channel in 0..<c {
                let top = (item * rowsPerItem + channel / columns) * (h + 1)
                let left = channel % columns * (w + 1)
                let plane = (item * c + channel) * h * w
                for y in 0..<h {
                    for x in 0..<w {
                        pixels[(top + y) * width + left + x] = level(dataPointer[plane + y * w + x])
                    }
                }
            }
        }
        try writeAtomically(to: path) { descriptor in
            if let message = cMessageOnFailure({
                lk_png_write_gray8(descriptor, pixels, UInt32(width), UInt32(height), $0, $1)
            }) {
                throw LayerKitError.file("cannot write PNG '\(path)': \(message)")
            }
        }
    }

    /// Writes the tensor as a picture: a 1xCxHxW (or CxHxW) image with
    /// values in 0...1, as `init(pngFile:)` reads them, becomes an 8-bit
    /// PNG, gray for C = 1, RGB for 3 and RGBA for 4. Values are clamped to
    /// 0...1 and rounded to the nearest of 256 levels; NaN writes 0.
    ///
    /// The file is written unnamed and put in place whole, as
    /// `writeActivationPNG(to:)` does. Throws `unsupported` for another
    /// channel count or batch (naming `.npy`, which holds any tensor, and
    /// the activation grid), or a picture over the PNG size limits.
    public func writeImagePNG(to path: String) throws {
        let dims: (c: Int, h: Int, w: Int)
        switch shape.count {
        case 4 where shape[0] == 1: dims = (shape[1], shape[2], shape[3])
        case 3: dims = (shape[0], shape[1], shape[2])
        default:
            throw LayerKitError.unsupported(
                "\(path): a PNG holds one image, 1xCxHxW; shape \(Tensor.describe(shape)) is not one (write .npy, "
                + "which holds any tensor, or draw its channels with --output-grid)")
        }
        guard [1, 3, 4].contains(dims.c) else {
            throw LayerKitError.unsupported(
                "\(path): shape \(Tensor.describe(shape)) has \(dims.c) channels; a PNG image holds 1 (gray), "
                + "3 (RGB) or 4 (RGBA) (write .npy, or draw the channels with --output-grid)")
        }
        guard dims.w >= 1, dims.h >= 1, dims.w <= LK_PNG_MAX_SIDE, dims.h <= LK_PNG_MAX_SIDE,
              dims.w * dims.h <= LK_PNG_MAX_PIXELS else {
            throw LayerKitError.unsupported(
                "\(path): a \(dims.w)x\(dims.h) picture; the limit is \(LK_PNG_MAX_SIDE) pixels a side and \(LK_PNG_MAX_PIXELS) in all")
        }
        let plane = dims.h * dims.w
        var pixels = [UInt8](repeating: 0, count: plane * dims.c)
        for channel in 0..<dims.c {
            let source = dataPointer + channel * plane
            for i in 0..<plane {
                let value = source[i]
                // NaN fails both comparisons and stays 0.
                pixels[i * dims.c + channel] = value >= 1 ? 255 : value > 0 ? UInt8((value * 255).rounded()) : 0
            }
        }
        try writeAtomically(to: path) { descriptor in
            if let message = cMessageOnFailure({
                lk_png_write8(descriptor, pixels, UInt32(dims.w), UInt32(dims.h), UInt32(dims.c), $0, $1)
            }) {
                throw LayerKitError.file("cannot write PNG '\(path)': \(message)")
            }
        }
    }

    /// The mapping from element values to gray levels described in
    /// `writeActivationPNG(to:)`.
    private func grayLevels() -> (Float) -> UInt8 {
        var low = Float.infinity, high = -Float.infinity
        for value in elements where value.isFinite {
            low = min(low, value)
            high = max(high, value)
        }
        // Double, because high - low overflows Float for values near ±Float.max.
        let (offset, range) = (Double(low), Double(high) - Double(low))
        return { value in
            if value.isNaN { return 0 }
            if value.isInfinite { return value > 0 ? 255 : 0 }
            guard range > 0 else { return 128 }
            return UInt8(clamping: Int(((Double(value) - offset) / range * 255).rounded()))
        }
    }
}

/// Runs a C call that returns 0 on success or nonzero with a message in the
/// buffer it is given; returns that message on failure and nil on success.
func cMessageOnFailure(_ call: (UnsafeMutablePointer<CChar>, Int) -> Int32) -> String? {
    var buffer = [CChar](repeating: 0, count: 256)
    let status = buffer.withUnsafeMutableBufferPointer { buffer -> Int32 in
        guard let base = buffer.baseAddress else { return -1 }
        base[buffer.count - 1] = 0
        return call(base, buffer.count - 1)
    }
    guard status != 0 else { return nil }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
