#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Whole-file writes for LayerKit's users (the CLI's plots and traces):
/// the file is unnamed until complete, as for `.npy` and PNG outputs.
public enum AtomicFile {
    /// Writes `data` to `path`: `path` holds its old contents or all of
    /// `data`, whatever signal ends the process (`writeAtomically(to:using:)`).
    /// Throws `LayerKitError.file` naming `path` and the reason.
    public static func write(_ data: Data, to path: String) throws {
        try writeAtomically(data, to: path)
    }
}

/// Writes `data` to `path` so that `path` ends up holding either its old
/// contents or all of `data`, never a partial file (see
/// `writeAtomically(to:using:)`).
func writeAtomically(_ data: Data, to path: String) throws {
    try writeAtomically(to: path, streaming: { write in try data.withUnsafeBytes { try write($0) } })
}

/// Writes the bytes `produce` passes to its `write` callback, in order, to
/// `path` as `writeAtomically(_:to:)` does: they go to the file as they
/// come, so a large output is never gathered in memory first.
func writeAtomically(to path: String,
                     streaming produce: (_ write: (UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws {
    try writeAtomically(to: path) { descriptor in
        try produce { bytes in try writeAll(bytes, to: descriptor, reportingAs: path) }
    }
}

/// Lets `write` fill a new file through `descriptor`, then puts it at
/// `path` in one step: `path` holds its old contents or the whole new
/// file, never a part.
///
/// On Linux the file is created unnamed (`O_TMPFILE` in `path`'s
/// directory) and only linked into place once `write` and `fsync` are
/// done, so no signal, SIGKILL included, can leave a partial file or a
/// temporary one. Where the file system refuses `O_TMPFILE` (or
/// `LAYERKIT_ATOMIC_FALLBACK=1` asks for it), a short-named temporary
/// file beside `path` is used and SIGINT, SIGTERM, SIGHUP, SIGQUIT and
/// SIGXFSZ remove it before the process dies of that signal (a shell
/// reports 130, 143, 129...). The temporary name never exceeds the file
/// system's name limit, so any valid `path` can be written.
///
/// A symbolic link at `path` is written through (its target is
/// replaced), and an existing target keeps its permission bits. A target
/// that exists but is not a regular file (a directory, a device such as
/// `/dev/null`, a FIFO) is refused. On any failure `path` is untouched.
func writeAtomically(to path: String, using write: (_ descriptor: Int32) throws -> Void) throws {
    let target = try AtomicTarget(path)
    if let descriptor = target.openUnnamed() {
        defer { close(descriptor) }
        try fill(descriptor, using: write, reportingAs: path)
        try target.link(descriptor)
        return
    }
    let temporary = target.directory + "/" + AtomicTarget.temporaryName()
    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, target.mode)
    guard descriptor >= 0 else { throw target.failure(systemErrorText()) }
    TemporaryFiles.register(temporary)
    defer { TemporaryFiles.unregister(temporary) }
    do {
        defer { close(descriptor) }
        try fill(descriptor, using: write, reportingAs: path)
        guard rename(temporary, target.destination) == 0 else { throw target.failure(systemErrorText()) }
    } catch {
        unlink(temporary)
        throw error
    }
}

/// Runs `write` on `descriptor` and flushes the file to disk, so a crash
/// after it is linked into place cannot expose an empty file.
private func fill(_ descriptor: Int32, using write: (Int32) throws -> Void, reportingAs path: String) throws {
    try write(descriptor)
    guard fsync(descriptor) == 0 else {
        throw LayerKitError.file("cannot write '\(path)': \(systemErrorText())")
    }
}

/// Writes all of `bytes` to `descriptor`; errors name `shownPath`.
func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, reportingAs shownPath: String) throws {
    var offset = 0
    while offset < bytes.count {
        let written = Glibc.write(descriptor, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
        if written > 0 {
            offset += written
        } else if written == 0 || errno != EINTR {
            throw LayerKitError.file("cannot write '\(shownPath)': " + (written == 0 ? "no bytes written" : systemErrorText()))
        }
    }
}

/// Where an atomic write lands: the destination file (a symbolic link's
/// target), its directory, and the mode a new file gets.
private struct AtomicTarget {
    /// The path as the user gave it, for messages.
    let shown: String
    /// The file that is replaced: `shown`, or the file a link there names.
    let destination: String
    let directory: String
    /// The old file's permission bits, or 0666 (less the umask) for a new file.
    let mode: mode_t
    /// Whether `destination` exists now.
    let exists: Bool

    init(_ path: String) throws {
        shown = path
        var destination = path
        var status = stat()
        var exists = false
        if lstat(path, &status) == 0 {
            if (status.st_mode & S_IFMT) == S_IFLNK, let real = realpath(path, nil) {
                destination = String(cString: real)
                free(real)
                _ = stat(destination, &status)
            }
            exists = true
        }
        if exists {
            guard (status.st_mode & S_IFMT) == S_IFREG else {
                throw LayerKitError.file("cannot write '\(path)': \(RegularFile.kindDescription(status.st_mode))")
            }
        }
        self.destination = destination
        self.exists = exists
        mode = exists ? status.st_mode & 0o7777 : 0o666
        let slash = destination.lastIndex(of: "/")
        directory = slash.map { $0 == destination.startIndex ? "/" : String(destination[..<$0]) } ?? "."
    }

    /// A new unnamed file in `directory` (`O_TMPFILE`), or nil where the
    /// file system (or `LAYERKIT_ATOMIC_FALLBACK`) says no.
    func openUnnamed() -> Int32? {
        #if os(Linux)
        guard ProcessInfo.processInfo.environment["LAYERKIT_ATOMIC_FALLBACK"] != "1",
              access("/proc/self/fd", X_OK) == 0 else { return nil }
        // O_TMPFILE is a macro Swift does not import: __O_TMPFILE (020000000 on Linux) with O_DIRECTORY.
        let tmpfile: Int32 = 0o20000000 | O_DIRECTORY
        let descriptor = open(directory, tmpfile | O_WRONLY | O_CLOEXEC, mode)
        guard descriptor >= 0 else { return nil }
        if exists { fchmod(descriptor, mode) }  // the umask must not narrow the old file's mode
        return descriptor
        #else
        return nil
        #endif
    }

    /// Gives the unnamed file `descriptor` its name. linkat(2) cannot
    /// replace a file, so over an existing one it links a short temporary
    /// name, then renames that over the destination; a new destination is
    /// linked directly (and never replaces what another process made
    /// meanwhile: that falls back to the rename).
    func link(_ descriptor: Int32) throws {
        let source = "/proc/self/fd/\(descriptor)"
        if !exists, linkat(AT_FDCWD, source, AT_FDCWD, destination, AT_SYMLINK_FOLLOW) == 0 { return }
        let temporary = directory + "/" + AtomicTarget.temporaryName()
        guard linkat(AT_FDCWD, source, AT_FDCWD, temporary, AT_SYMLINK_FOLLOW) == 0 else {
            throw failure(systemErrorText())
        }
        // The file now has a name, for two system calls: a signal then still must not leave it.
        TemporaryFiles.register(temporary)
        defer { TemporaryFiles.unregister(temporary) }
        guard rename(temporary, destination) == 0 else {
            let text = systemErrorText()
            unlink(temporary)
            throw failure(text)
        }
    }

    func failure(_ reason: String) -> LayerKitError {
        .file("cannot write '\(shown)': \(reason)")
    }

    /// `.lk-<pid>-<16 hex digits>.tmp`: at most 35 bytes whatever the
    /// destination's name, far below any file system's NAME_MAX.
    static func temporaryName() -> String {
        ".lk-\(getpid())-\(String(UInt64.random(in: .min ... .max), radix: 16)).tmp"
    }
}

/// The temporary files of writes in progress, removed by the handlers of
/// the signals that end a process, in async-signal-safe code: fixed slots
/// of C strings allocated once, read by the handler with unlink(2) only.
enum TemporaryFiles {
    private static let slotCount = 16
    private static let slotSize = Int(PATH_MAX) + 1
    private static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGXFSZ]
    nonisolated(unsafe) private static let slots: UnsafeMutablePointer<CChar> = {
        let slots = UnsafeMutablePointer<CChar>.allocate(capacity: slotCount * slotSize)
        slots.initialize(repeating: 0, count: slotCount * slotSize)
        return slots
    }()
    nonisolated(unsafe) private static let previous: UnsafeMutablePointer<sigaction> = {
        let previous = UnsafeMutablePointer<sigaction>.allocate(capacity: 65)
        previous.initialize(repeating: sigaction(), count: 65)
        return previous
    }()
    nonisolated(unsafe) private static var installed: Set<Int32> = []
    nonisolated(unsafe) private static var active = 0
    private static let lock = NSLock()

    /// Records `path` for removal if the process is signalled; installs the
    /// handlers while any write is in progress.
    static func register(_ path: String) {
        lock.lock(); defer { lock.unlock() }
        let bytes = Array(path.utf8)
        guard bytes.count < slotSize else { return }
        for slot in 0..<slotCount where slots[slot * slotSize] == 0 {
            let start = slots + slot * slotSize
            // The first byte goes last: the handler sees a slot whole or empty.
            for (i, byte) in bytes.enumerated().dropFirst() { start[i] = CChar(bitPattern: byte) }
            start[bytes.count] = 0
            start[0] = CChar(bitPattern: bytes[0])
            break
        }
        active += 1
        if active == 1 { install() }
    }

    /// Forgets `path` (written or removed); the last one restores the
    /// previous signal handlers.
    static func unregister(_ path: String) {
        lock.lock(); defer { lock.unlock() }
        for slot in 0..<slotCount where String(cString: slots + slot * slotSize) == path {
            slots[slot * slotSize] = 0
            break
        }
        active -= 1
        if active == 0 {
            for signal in installed { sigaction(signal, previous + Int(signal), nil) }
            installed = []
        }
    }

    private static func install() {
        for signal in signals {
            var old = sigaction()
            guard sigaction(signal, nil, &old) == 0 else { continue }
            // An ignored signal (nohup's SIGHUP) stays ignored: it ends nothing.
            #if canImport(Glibc)
            if old.__sigaction_handler.sa_handler.map({ unsafeBitCast($0, to: Int.self) }) == 1 { continue }  // SIG_IGN
            #endif
            previous[Int(signal)] = old
            var action = sigaction()
            #if canImport(Glibc)
            action.__sigaction_handler.sa_handler = { signal in TemporaryFiles.removeAndResignal(signal) }
            #endif
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            if sigaction(signal, &action, nil) == 0 { installed.insert(signal) }
        }
    }

    /// The handler: removes every recorded file, restores the previous
    /// action and raises the signal again, so the process ends as it
    /// would have (or the previous handler runs).
    private static func removeAndResignal(_ signal: Int32) {
        for slot in 0..<slotCount where slots[slot * slotSize] != 0 {
            unlink(slots + slot * slotSize)
        }
        sigaction(signal, previous + Int(signal), nil)
        raise(signal)
    }
}

/// The text of the current `errno`.
func systemErrorText() -> String {
    String(cString: strerror(errno))
}
