#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Opening the files LayerKit reads (`.npy`, `.png`, `.onnx`): only
/// regular files, checked on the open descriptor, so a FIFO with no writer
/// cannot hang the open and a device such as `/dev/zero` cannot stream
/// forever; each refusal says what the file is.
package enum RegularFile {
    /// Opens `path` for reading. The open itself does not block
    /// (`O_NONBLOCK`, which a FIFO would otherwise wait in for a writer);
    /// the descriptor's own type is checked, so nothing can swap the file
    /// between a check and the open. The caller closes the descriptor.
    package static func open(_ path: String) throws -> Int32 {
        let descriptor = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw LayerKitError.file("cannot read '\(path)': \(String(cString: strerror(errno)))")
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let text = String(cString: strerror(errno))
            close(descriptor)
            throw LayerKitError.file("cannot read '\(path)': \(text)")
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            throw LayerKitError.file("cannot read '\(path)': \(kindDescription(status.st_mode))")
        }
        // Reads of a regular file never block; clear the flag all the same.
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        return descriptor
    }

    /// The whole of the regular file at `path` as a `Data` (`bytes`, copied).
    package static func contents(_ path: String) throws -> Data {
        Data(try bytes(path))
    }

    /// The whole of the regular file at `path` as bytes, read straight into
    /// the array: what a decoder reads (reading a `Data` and copying it into
    /// an array cost GPT-2 small's 0.5 GB model 0.4 s more).
    package static func bytes(_ path: String) throws -> [UInt8] {
        let descriptor = try open(path)
        defer { close(descriptor) }
        func failure() -> LayerKitError { .file("cannot read '\(path)': \(String(cString: strerror(errno)))") }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw failure() }
        let size = Int(max(status.st_size, 0))
        var bytes = try [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = 0
            while count < size {
                let n = read(descriptor, buffer.baseAddress! + count, size - count)
                if n < 0, errno == EINTR { continue }
                guard n >= 0 else { throw failure() }
                if n == 0 { break }  // the file shrank since fstat
                count += n
            }
        }
        // What the file grew by since fstat.
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw failure() }
            if n == 0 { return bytes }
            bytes += chunk[..<n]
        }
    }

    /// `not a regular file (a FIFO)`, and so on: why a file of this mode is
    /// neither read nor replaced.
    package static func kindDescription(_ mode: mode_t) -> String {
        let kind: String
        switch mode & S_IFMT {
        case S_IFDIR: kind = "a directory"
        case S_IFCHR: kind = "a character device"
        case S_IFBLK: kind = "a block device"
        case S_IFIFO: kind = "a FIFO"
        case S_IFSOCK: kind = "a socket"
        case S_IFLNK: kind = "a symbolic link"
        default: kind = "of an unknown kind"
        }
        return "not a regular file (\(kind))"
    }
}
