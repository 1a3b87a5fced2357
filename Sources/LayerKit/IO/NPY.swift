import Foundation

/// Reading and writing numpy `.npy` files.
///
/// Reading accepts format versions 1.0, 2.0 and 3.0 with little-endian
/// `<f4`, `<f2` or `<f8` elements in C order; half and double values are
/// converted to Float (doubles round to nearest, overflowing to infinity).
/// Writing produces version 1.0 `<f4` files that numpy reads directly.
extension Tensor {
    /// Reads a tensor from the `.npy` file at `path`.
    ///
    /// Throws `LayerKitError.file` when the file cannot be read or is
    /// malformed or truncated, and `LayerKitError.unsupported` for dtypes
    /// other than `<f2`, `<f4`, `<f8`, Fortran order, or unknown versions.
    public convenience init(npyFile path: String) throws {
        let data = try RegularFile.contents(path)
        try self.init(npyData: data, source: "'\(path)'")
    }

    /// Reads a tensor from the bytes of a `.npy` file, with the same checks
    /// as `init(npyFile:)`.
    public convenience init(npyData data: Data) throws {
        try self.init(npyData: data, source: ".npy data")
    }

    private convenience init(npyData data: Data, source: String) throws {
        let header = try data.withUnsafeBytes { try NPYHeader(parsing: $0, source: source) }
        try self.init(shape: header.shape)
        let elements = self.elements
        data.withUnsafeBytes { bytes in
            let base = header.dataOffset
            switch header.dtype {
            case .float32:
                for i in elements.indices {
                    let bits = bytes.loadUnaligned(fromByteOffset: base + 4 * i, as: UInt32.self)
                    elements[i] = Float(bitPattern: UInt32(littleEndian: bits))
                }
            case .float16:
                for i in elements.indices {
                    let bits = bytes.loadUnaligned(fromByteOffset: base + 2 * i, as: UInt16.self)
                    elements[i] = Float(halfBits: UInt16(littleEndian: bits))
                }
            case .float64:
                for i in elements.indices {
                    let bits = bytes.loadUnaligned(fromByteOffset: base + 8 * i, as: UInt64.self)
                    elements[i] = Float(Double(bitPattern: UInt64(littleEndian: bits)))
                }
            }
        }
    }

    /// The tensor as the bytes of a version 1.0 `.npy` file: `<f4`, C order,
    /// the data aligned to 64 bytes.
    public func npyData() -> Data {
        let header = NPYHeader.encoded(shape: shape)
        var data = Data(count: header.count + 4 * count)
        data.withUnsafeMutableBytes { bytes in
            bytes.copyBytes(from: header)
            for (i, value) in elements.enumerated() {
                bytes.storeBytes(of: value.bitPattern.littleEndian,
                                 toByteOffset: header.count + 4 * i, as: UInt32.self)
            }
        }
        return data
    }

    /// Writes the tensor to `path` as a `.npy` file (see `npyData()`).
    ///
    /// The file is written unnamed and put in place whole
    /// (`writeAtomically(to:using:)`), so `path` never holds a partial file. Throws
    /// `LayerKitError.file` if the file cannot be written.
    public func writeNPY(to path: String) throws {
        try writeAtomically(npyData(), to: path)
    }
}
