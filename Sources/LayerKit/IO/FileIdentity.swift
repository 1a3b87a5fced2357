#if canImport(Glibc)
import Glibc
#endif

/// A file by identity, its device and inode, as stat(2) finds it: the
/// kernel follows symbolic links and resolves `..` after them, so
/// `link/../x.npy`, `./x.npy`, a symbolic link and a hard link to one file
/// are all the same file, whatever text names them.
public struct FileIdentity: Equatable, Sendable {
    /// The device that holds the file.
    public let device: UInt64
    /// The file's inode number on that device.
    public let inode: UInt64

    /// The identity of the file at `path`, or nil if there is none.
    public init?(_ path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
    }

    /// Throws unless `output` is a file other than every one of `inputs`
    /// (inputs, weights, the model): writing it would destroy what the
    /// command reads. An output that does not exist yet is no input.
    public static func refuseOverwrite(of output: String, readingFrom inputs: [String]) throws {
        guard let target = FileIdentity(output) else { return }
        for input in inputs where FileIdentity(input) == target {
            throw LayerKitError.file("output \(output) is also an input (\(input)); refusing to overwrite it")
        }
    }
}
