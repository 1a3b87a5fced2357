import Foundation

/// A progress bar on standard error for work that can take more than a
/// second (bench, profile, parity --all, the sweep, batches), as cargo and
/// pip draw one: only when standard error is a terminal
/// (`Console.errorIsTerminal`), never into a pipe or a file; redrawn in
/// place at most ten times a second, and erased when the work ends, so the
/// lines the command prints are the same with or without it.
final class ProgressBar {
    private let label: String
    private let total: Int
    private let console: Console
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant
    private var lastDraw: ContinuousClock.Instant?
    private var done = 0
    private var drawn = false

    /// A bar for `total` steps of `label`; silent unless `console`'s error
    /// stream is a terminal.
    init(_ label: String, total: Int, console: Console) {
        (self.label, self.total, self.console) = (label, max(0, total), console)
        start = clock.now
    }

    /// Whether this bar draws at all.
    var isVisible: Bool { console.errorIsTerminal }

    /// Counts `steps` more done and redraws if a tenth of a second has passed.
    func advance(_ steps: Int = 1) {
        done = min(total, done + steps)
        guard isVisible else { return }
        let now = clock.now
        if let lastDraw, now - lastDraw < .milliseconds(100), done < total { return }
        lastDraw = now
        drawn = true
        console.writeError("\r" + Self.render(label: label, done: done, total: total,
                                              elapsed: Timing.milliseconds(now - start) / 1000) + "\u{1B}[K")
    }

    /// Erases the bar (the line is left empty for what comes next).
    func finish() {
        guard drawn else { return }
        drawn = false
        console.writeError("\r\u{1B}[K")
    }

    /// Runs `body` once per step `0..<total`, advancing after each, and
    /// erases the bar at the end, on error too.
    static func forEach<T>(_ label: String, total: Int, console: Console,
                           _ body: (Int) throws -> T) rethrows -> [T] {
        let bar = ProgressBar(label, total: total, console: console)
        defer { bar.finish() }
        var results: [T] = []
        results.reserveCapacity(total)
        for i in 0..<total {
            results.append(try body(i))
            bar.advance()
        }
        return results
    }

    /// One frame: `label [=========>          ] 12/30 40% 1.2s`, the bar
    /// `width` cells wide (label escaped: it may hold a file name).
    static func render(label: String, done: Int, total: Int, elapsed: Double, width: Int = 30) -> String {
        let fraction = total > 0 ? Double(min(done, total)) / Double(total) : 1
        let filled = Int((fraction * Double(width)).rounded(.down))
        let bar = filled >= width ? String(repeating: "=", count: width)
            : String(repeating: "=", count: filled) + ">" + String(repeating: " ", count: width - filled - 1)
        return "\(Printable.escaped(label)) [\(bar)] \(done)/\(total) \(Int((fraction * 100).rounded(.down)))% "
            + String(format: "%.1fs", elapsed)
    }
}
