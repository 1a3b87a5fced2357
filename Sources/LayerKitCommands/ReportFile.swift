import Foundation
import LayerKit

/// Writes a report file (a plot, a trace): atomically, never over a file
/// the command reads.
enum ReportFile {
    /// Throws unless `path` ends in `.<fileExtension>` and is none of `inputs`.
    static func check(_ path: String, fileExtension: String, notAmong inputs: [String]) throws {
        guard path.lowercased().hasSuffix(".\(fileExtension)") else {
            throw UsageError("\(path): expected a .\(fileExtension) file name")
        }
        let target = URL(fileURLWithPath: path).standardizedFileURL.path
        for input in inputs where URL(fileURLWithPath: input).standardizedFileURL.path == target {
            throw LayerKitError.file("output \(path) is also an input (\(input)); refusing to overwrite it")
        }
    }

    /// Writes `data` to `path` through a temporary file renamed into place.
    static func write(_ data: Data, to path: String) throws {
        do {
            try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw LayerKitError.file("cannot write \(path): \(error.localizedDescription)")
        }
    }
}
