#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Reading and writing numpy `.npy` files.
///
/// Reading accepts format versions 1.0, 2.0 and 3.0 with little-endian
/// `<f4`, `<f2` or `<f8` elements in C order; half and double values are
/// converted to Float (doubles round to nearest, overflowing to infinity).
/// Writing produces version 1.0 `<f4` files that numpy reads directly.
///
/// Files are read and written in pieces: the header is checked against the
/// file's length before the tensor is allocated, `<f4` elements go straight
/// between the file and the tensor's storage, and other types through a
/// buffer of `NPYStreaming.chunkBytes`. Memory is the tensor plus that buffer,
/// never a copy of the file.
extension Tensor {
    /// Reads a tensor from the `.npy` file at `path`.
    ///
    /// Throws `LayerKitError.file` when the file cannot be read or is
    /// malformed or truncated, and `LayerKitError.unsupported` for dtypes
    /// other than `<f2`, `<f4`, `<f8` (integer and bool files are read by
    /// `TypedTensor(npyFile:)`), Fortran order, or unknown versions.
    public convenience init(npyFile path: String) throws {
        let (length, source, read) = try NPYStreaming.reader(path)
        try self.init(npyLength: length, source: source, read: read)
    }

    /// Reads a tensor from the bytes of a `.npy` file, with the same checks
    /// as `init(npyFile:)`.
    public convenience init(npyData data: Data) throws {
        try self.init(npyLength: data.count, source: ".npy data") { offset, destination in
            data.withUnsafeBytes { bytes in
                destination.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + destination.count]))
            }
        }
    }

    /// Decodes a `.npy` input of `length` bytes that `read` fills pieces of
    /// (a byte offset, then the buffer to fill from there).
    private convenience init(npyLength length: Int, source: String,
                             read: (Int, UnsafeMutableRawBufferPointer) throws -> Void) throws {
        let prefix = UnsafeMutableRawBufferPointer.allocate(byteCount: min(length, NPYStreaming.maxHeaderBytes),
                                                            alignment: 8)
        defer { prefix.deallocate() }
        try read(0, prefix)
        let header = try NPYHeader(parsing: UnsafeRawBufferPointer(prefix), totalLength: length, source: source)
        guard [.float16, .float32, .float64].contains(header.elementType) else {
            throw LayerKitError.unsupported("\(source): dtype '\(header.descr)' holds \(header.elementType) values; "
                                            + "a float32 tensor is read from '<f2', '<f4' or '<f8'")
        }
        try self.init(shape: header.shape)
        let size = header.elementType.byteWidth ?? 4
        if header.elementType == .float32 {
            try read(header.dataOffset, UnsafeMutableRawBufferPointer(start: dataPointer, count: 4 * count))
            #if _endian(big)
            for i in elements.indices { elements[i] = Float(bitPattern: UInt32(littleEndian: elements[i].bitPattern)) }
            #endif
            return
        }
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: NPYStreaming.chunkBytes, alignment: 8)
        defer { chunk.deallocate() }
        let perChunk = NPYStreaming.chunkBytes / size
        var start = 0
        while start < count {
            let n = min(perChunk, count - start)
            let piece = UnsafeMutableRawBufferPointer(rebasing: chunk[..<(n * size)])
            try read(header.dataOffset + start * size, piece)
            let out = dataPointer + start
            if header.elementType == .float16 {
                for i in 0..<n { out[i] = Float(halfBits: UInt16(littleEndian: piece.load(fromByteOffset: 2 * i, as: UInt16.self))) }
            } else {
                for i in 0..<n {
                    out[i] = Float(Double(bitPattern: UInt64(littleEndian: piece.load(fromByteOffset: 8 * i, as: UInt64.self))))
                }
            }
            start += n
        }
    }

    /// The tensor as the bytes of a version 1.0 `.npy` file: `<f4`, C order,
    /// the data aligned to 64 bytes.
    public func npyData() -> Data {
        var data = Data(capacity: NPYHeader.encoded(shape: shape).count + 4 * count)
        writeNPYBytes { data.append(contentsOf: $0) }
        return data
    }

    /// Writes the tensor to `path` as a `.npy` file (see `npyData()`).
    ///
    /// The bytes are streamed into a file that is written unnamed and put in
    /// place whole (`writeAtomically(to:streaming:)`), so `path` never holds
    /// a partial file and no copy of the tensor is made. Throws
    /// `LayerKitError.file` if the file cannot be written.
    public func writeNPY(to path: String) throws {
        try writeAtomically(to: path, streaming: writeNPYBytes)
    }

    /// Passes the `.npy` bytes to `write` in order: the header, then the
    /// elements (straight from storage on a little-endian machine).
    private func writeNPYBytes(_ write: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        try NPYHeader.encoded(shape: shape).withUnsafeBytes { try write($0) }
        #if _endian(little)
        try write(UnsafeRawBufferPointer(start: dataPointer, count: 4 * count))
        #else
        var start = 0
        while start < count {
            let piece = (start..<min(count, start + NPYStreaming.chunkBytes / 4)).map { elements[$0].bitPattern.littleEndian }
            try piece.withUnsafeBytes { try write($0) }
            start += piece.count
        }
        #endif
    }
}

extension TypedTensor {
    /// Reads a tensor of the file's own element type from the `.npy` file
    /// at `path`: every numpy dtype of `NPYHeader.descriptors` (little-endian
    /// floats, integers, booleans) and fixed-width unicode strings (`<U`n),
    /// with the checks of `Tensor(npyFile:)`.
    public init(npyFile path: String) throws {
        let (length, source, read) = try NPYStreaming.reader(path)
        let prefix = UnsafeMutableRawBufferPointer.allocate(byteCount: min(length, NPYStreaming.maxHeaderBytes), alignment: 8)
        defer { prefix.deallocate() }
        try read(0, prefix)
        let header = try NPYHeader(parsing: UnsafeRawBufferPointer(prefix), totalLength: length, source: source)
        var bytes = [UInt8](repeating: 0, count: header.count * header.itemSize)
        try bytes.withUnsafeMutableBytes { try read(header.dataOffset, $0) }
        if header.elementType == .string {
            try self.init(shape: header.shape, strings: try Self.unicodeStrings(bytes, header, source))
            return
        }
        if header.elementType == .bool, let bad = bytes.first(where: { $0 > 1 }) {
            throw LayerKitError.file("\(source): a bool element holds \(bad), not 0 or 1")
        }
        try self.init(elementType: header.elementType, shape: header.shape, bytes: bytes)
    }

    /// The elements of a `<U`n array: n UTF-32LE code units each, numpy's
    /// trailing NULs dropped.
    private static func unicodeStrings(_ bytes: [UInt8], _ header: NPYHeader, _ source: String) throws -> [String] {
        let characters = header.itemSize / 4
        return try (0..<header.count).map { i in
            let codes = (0..<characters).map { c in
                (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[(i * characters + c) * 4 + $1]) << (8 * $1) }
            }
            // NULs at the end are numpy's padding; one inside the string is kept.
            let end = (codes.lastIndex { $0 != 0 } ?? -1) + 1
            return try String(String.UnicodeScalarView(codes[..<end].map { code in
                guard let scalar = Unicode.Scalar(code) else {
                    throw LayerKitError.file("\(source): string element \(i) holds \(code), which is no Unicode character")
                }
                return scalar
            }))
        }
    }

    /// Writes the tensor to `path` as a version 1.0 `.npy` file in its own
    /// dtype (strings as `<U`n, n their most characters), put in place whole
    /// (`writeAtomically(to:streaming:)`). Types numpy has no dtype for
    /// (bfloat16, float8, 4-bit) throw: write those as a TensorProto
    /// (`tensorProto(name:)`).
    public func writeNPY(to path: String) throws {
        if elementType == .string {
            let scalars = strings.map { Array($0.unicodeScalars) }
            // numpy writes at least one character per element ('<U1' for empty strings).
            let characters = max(1, scalars.map(\.count).max() ?? 0)
            try writeAtomically(to: path, streaming: { write in
                try NPYHeader.encoded(shape: shape, descr: "<U\(characters)").withUnsafeBytes { try write($0) }
                for element in scalars {
                    let units = element.map(\.value) + Array(repeating: 0, count: characters - element.count)
                    try units.map(\.littleEndian).withUnsafeBytes { try write($0) }
                }
            })
            return
        }
        guard let descr = NPYHeader.descriptor(of: elementType) else {
            throw LayerKitError.unsupported("numpy has no dtype for \(elementType): write '\(path)' as a .pb "
                                            + "(ONNX TensorProto) file instead")
        }
        try writeAtomically(to: path, streaming: { write in
            try NPYHeader.encoded(shape: shape, descr: descr).withUnsafeBytes { try write($0) }
            try bytes.withUnsafeBytes { try write($0) }
        })
    }
}

extension TypedTensor {
    /// Writes the tensor to `path` as a serialized ONNX `TensorProto` named
    /// `name` (every element type), put in place whole.
    public func writeTensorProto(to path: String, name: String) throws {
        try writeAtomically(Data(tensorProto(name: name)), to: path)
    }

    /// numpy's name for `type` ("int64", "bool"), nil where numpy has none.
    public static func numpyName(_ type: ElementType) -> String? {
        NPYHeader.descriptor(of: type) == nil ? nil : type == .bool ? "bool_" : type.description
    }
}

/// The sizes `.npy` streaming works in.
enum NPYStreaming {
    /// The file at `path` opened for reading in pieces: its length, how
    /// errors name it, and a reader of (byte offset, buffer to fill).
    /// Only a regular file, opened without blocking (RegularFile): a FIFO
    /// cannot hang the read. The descriptor lives as long as the reader.
    static func reader(_ path: String) throws
        -> (length: Int, source: String, read: (Int, UnsafeMutableRawBufferPointer) throws -> Void) {
        let source = "'\(path)'"
        let file = try OpenFile(path)
        var status = stat()
        guard fstat(file.descriptor, &status) == 0 else { throw LayerKitError.file("cannot read \(source): \(systemErrorText())") }
        let read = { (offset: Int, destination: UnsafeMutableRawBufferPointer) throws in
            guard let base = destination.baseAddress else { return }
            var done = 0
            while done < destination.count {
                let got = pread(file.descriptor, base + done, destination.count - done, off_t(offset + done))
                if got > 0 {
                    done += got
                } else if got == 0 || errno != EINTR {
                    throw LayerKitError.file("cannot read \(source): "
                                             + (got == 0 ? "the file ended early (was it changed while read?)" : systemErrorText()))
                }
            }
        }
        return (Int(status.st_size), source, read)
    }

    /// A descriptor closed when the last reader holding it is gone.
    private final class OpenFile {
        let descriptor: Int32
        init(_ path: String) throws { descriptor = try RegularFile.open(path) }
        deinit { close(descriptor) }
    }

    /// The most header bytes read: numpy's headers are a few hundred bytes;
    /// a file claiming more is refused.
    static let maxHeaderBytes = 1 << 20
    /// The buffer converting `<f2`/`<f8` elements.
    static let chunkBytes = 1 << 20
}
