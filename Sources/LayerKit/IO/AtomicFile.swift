#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Writes `data` to `path` so that `path` ends up holding either its old
/// contents or all of `data`, never a partial file.
func writeAtomically(_ data: Data, to path: String) throws {
    try writeAtomically(to: path, streaming: { write in try data.withUnsafeBytes { try write($0) } })
}

/// Writes the bytes `produce` passes to its `write` callback, in order, to
/// `path` as `writeAtomically(_:to:)` does: they are streamed to the file as
/// they come, so a large output is never gathered in memory first.
func writeAtomically(to path: String,
                     streaming produce: (_ write: (UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws {
    try writeAtomically(to: path) { temporaryPath in
        try writeFile(to: temporaryPath, reportingAs: path, produce)
    }
}

/// Lets `write` create a temporary file beside `path`, then renames it over
/// `path`. On any failure the temporary file is removed and `path` is left
/// untouched. A sibling is used because rename(2) is only atomic within one
/// file system.
func writeAtomically(to path: String, using write: (_ temporaryPath: String) throws -> Void) throws {
    let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
    let temporaryPath = "\(path[..<slash]).\(path[slash...]).\(UUID().uuidString).tmp"
    do {
        try write(temporaryPath)
        guard rename(temporaryPath, path) == 0 else {
            throw LayerKitError.file("cannot write '\(path)': \(systemErrorText())")
        }
    } catch {
        unlink(temporaryPath)  // may not exist if `write` failed early
        throw error
    }
}

/// Writes the bytes `produce` passes to its callback to a new file at `path`
/// and flushes it to disk, so a crash after the rename cannot expose an
/// empty file. Errors name `shownPath`.
private func writeFile(to path: String, reportingAs shownPath: String,
                       _ produce: (_ write: (UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
    guard fd >= 0 else {
        throw LayerKitError.file("cannot write '\(shownPath)': \(systemErrorText())")
    }
    var failure: String?
    do {
        try produce { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(fd, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
                if written > 0 {
                    offset += written
                } else if written == 0 || errno != EINTR {
                    throw LayerKitError.file("cannot write '\(shownPath)': "
                                             + (written == 0 ? "no bytes written" : systemErrorText()))
                }
            }
        }
    } catch {
        close(fd)
        throw error
    }
    if fsync(fd) != 0 { failure = systemErrorText() }
    if close(fd) != 0 && failure == nil { failure = systemErrorText() }
    if let failure { throw LayerKitError.file("cannot write '\(shownPath)': \(failure)") }
}

/// The text of the current `errno`.
func systemErrorText() -> String {
    String(cString: strerror(errno))
}
