import CJPEG

/// Reading JPEG images into tensors. libjpeg-turbo does the decoding,
/// behind the small C API of the CJPEG module.
extension Tensor {
    /// Reads the JPEG file at `path` as a 1xCxHxW tensor, planar (NCHW),
    /// with samples divided by 255: C is 1 for a gray JPEG and 3 (RGB) for
    /// a colour one. Pixels are those libjpeg's defaults give (accurate
    /// integer DCT, smooth chroma upsampling), as Pillow decodes them.
    ///
    /// Images over 16384 pixels a side or 2^26 pixels are refused from
    /// their header, before pixel memory is allocated; CMYK files are
    /// refused, and so is corrupt data libjpeg would only warn about (a
    /// truncated file). Throws `LayerKitError.file` naming the reason.
    public convenience init(jpegFile path: String) throws {
        var image = lk_jpeg_image()
        let descriptor = try RegularFile.open(path)  // lk_jpeg_read closes it
        if let message = cMessageOnFailure({ lk_jpeg_read(descriptor, &image, $0, $1) }) {
            throw LayerKitError.file("cannot read JPEG '\(path)': \(message)")
        }
        defer { lk_jpeg_free(&image) }
        guard let samples = image.samples else {
            throw LayerKitError.file("cannot read JPEG '\(path)': decoder returned no pixels")
        }
        let (channels, height, width) = (Int(image.channels), Int(image.height), Int(image.width))
        try self.init(shape: [1, channels, height, width])
        let plane = height * width
        for pixel in 0..<plane {
            for channel in 0..<channels {
                dataPointer[channel * plane + pixel] = Float(samples[pixel * channels + channel]) / 255
            }
        }
    }
}
