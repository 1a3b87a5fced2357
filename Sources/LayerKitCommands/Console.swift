import Foundation

/// Where a command writes: standard output and standard error by default,
/// strings in tests.
public struct Console: Sendable {
    let writeOut: @Sendable (String) -> Void
    let writeError: @Sendable (String) -> Void

    public init(out: @escaping @Sendable (String) -> Void, error: @escaping @Sendable (String) -> Void) {
        writeOut = out
        writeError = error
    }

    /// The process's stdout and stderr.
    public static let standard = Console(
        out: { FileHandle.standardOutput.write(Data($0.utf8)) },
        error: { FileHandle.standardError.write(Data($0.utf8)) })

    /// Prints a line on standard output.
    func print(_ line: String = "") { writeOut(line + "\n") }

    /// Prints a `layerkit: `-prefixed line on standard error.
    func note(_ line: String) { writeError("layerkit: \(line)\n") }
}
