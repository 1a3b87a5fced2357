import Foundation
import LayerKit

/// Writes a report file (a plot, a trace): atomically, never over a file
/// the command reads.
enum ReportFile {
    /// Throws unless `path` ends in `.<fileExtension>` and is none of the
    /// files the command reads (`ReadFiles`).
    static func check(_ path: String, fileExtension: String, notAmong inputs: ReadFiles) throws {
        guard path.lowercased().hasSuffix(".\(fileExtension)") else {
            throw UsageError("\(path): expected a .\(fileExtension) file name")
        }
        try inputs.refuseOverwrite(of: path)
    }

    /// Writes `data` to `path` as `.npy` and PNG outputs are written:
    /// unnamed until whole (`AtomicFile.write`).
    static func write(_ data: Data, to path: String) throws {
        try AtomicFile.write(data, to: path)
    }
}
