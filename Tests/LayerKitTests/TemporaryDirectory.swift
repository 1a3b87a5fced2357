import Foundation

/// A fresh directory under the system temporary directory, removed again by
/// `remove()`; each test gets its own so tests can run in parallel.
struct TemporaryDirectory {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory
            .appendingPathComponent("LayerKitTests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the directory.
    func file(_ name: String) -> String { "\(path)/\(name)" }

    /// The names of the entries in the directory, sorted.
    func contents() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}
