import Foundation

/// Where a command writes: standard output and standard error by default,
/// strings in tests.
public struct Console: Sendable {
    let writeOut: @Sendable (String) -> Void
    let writeError: @Sendable (String) -> Void
    /// Whether the error stream is a terminal: only then does long work
    /// draw a progress bar there (`ProgressBar`).
    let errorIsTerminal: Bool
    /// Where `note(_:)` lines wait while a command runs, if anywhere.
    private var notes: NoteBuffer?

    /// `errorIsTerminal` says whether `error` writes to a terminal (false:
    /// no progress bars, as for a pipe or a file).
    public init(out: @escaping @Sendable (String) -> Void, error: @escaping @Sendable (String) -> Void,
                errorIsTerminal: Bool = false) {
        writeOut = out
        writeError = error
        self.errorIsTerminal = errorIsTerminal
    }

    /// The process's stdout and stderr.
    public static let standard = Console(
        out: { FileHandle.standardOutput.write(Data($0.utf8)) },
        error: { FileHandle.standardError.write(Data($0.utf8)) },
        errorIsTerminal: isatty(STDERR_FILENO) != 0)

    /// Prints one line on standard output. Every line the CLI prints goes
    /// through here or `note(_:)`, so this is where names from the user's
    /// files are made safe: control characters are escaped
    /// (`Printable.escaped`), a newline included, so a line stays one line.
    func print(_ line: String = "") { writeOut(Printable.escaped(line) + "\n") }

    /// Prints lines of the CLI's own text (the usage), one `print` each.
    func printLines(_ text: String) {
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) { print(String(line)) }
    }

    /// Prints a `layerkit: `-prefixed line on standard error, escaped as
    /// `print` does and cut to about 1,000 characters (`Printable.elided`):
    /// an error may quote a huge formula or a long chain of names.
    func note(_ line: String) {
        let text = "layerkit: \(Printable.escaped(Printable.elided(line)))\n"
        if let notes { notes.append(text) } else { writeError(text) }
    }

    /// This console with its notes held in `buffer` until the command ends.
    func deferringNotes(to buffer: NoteBuffer) -> Console {
        var console = self
        console.notes = buffer
        return console
    }
}

/// A command's notices (fallbacks, conversions), held while it runs: written
/// to standard error when it succeeds, dropped when it fails, so an error
/// is the one line a failed command prints there.
final class NoteBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    private let console: Console

    init(_ console: Console) { self.console = console }

    func append(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }

    /// Writes the held notices, in order.
    func flush() {
        lock.lock(); let text = lines.joined(); lines = []; lock.unlock()
        if !text.isEmpty { console.writeError(text) }
    }

    func discard() { lock.lock(); lines = []; lock.unlock() }
}
