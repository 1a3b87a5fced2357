import Foundation

/// A fresh directory, removed again by `remove()` or, at the latest, when
/// the test process exits (with `root`); each test gets its own so tests can
/// run in parallel.
struct TemporaryDirectory {
    let path: String

    init() throws {
        path = Self.root + "/\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// The folder under the system temporary directory that holds every
    /// `TemporaryDirectory` of this process, removed when it exits.
    static let root: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("LayerKitTests-\(UUID().uuidString)").path
        atexit { try? FileManager.default.removeItem(atPath: TemporaryDirectory.root) }
        return path
    }()

    /// The path of `name` inside the directory.
    func file(_ name: String) -> String { "\(path)/\(name)" }

    /// The names of the entries in the directory, sorted.
    func contents() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}
