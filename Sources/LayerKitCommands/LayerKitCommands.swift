import LayerKit

/// The `layerkit` command line: parses, calls LayerKit, prints.
public enum LayerKitCommands {
    /// The general help: every command with every option it takes (from
    /// `CommandHelp`, so none is left out), then what they share.
    static var usage: String {
        var lines = ["usage: layerkit <command> [options]     (layerkit help <command>: one command in detail)",
                     "       layerkit --version", "", "commands:"]
        for command in CommandHelp.all {
            let synopsis = command.synopsis.map { "layerkit \(command.name) \($0)" }
            lines += synopsis.flatMap { CommandHelp.wrap($0, after: "  ", column: 4) }
            let options = command.options.map { "\($0.name)" + ($0.value.map { " " + $0 } ?? "") }
            if !options.isEmpty { lines += CommandHelp.wrap("options: " + options.joined(separator: ", "), after: "", column: 6) }
            lines += CommandHelp.wrap(command.summary, after: "", column: 6)
        }
        lines += ["  layerkit help [COMMAND]", "      this text, or one command's usage, options with defaults, and examples", ""]
        return lines.joined(separator: "\n") + "\n" + sharedNotes
    }

    static let sharedNotes = """
        --backend: cpu (the CPU evaluator), gpu (the chosen Vulkan device, lavapipe included;
          an error without one), auto (the GPU on real GPU hardware, else the CPU; the default
          except for profile: gpu, and bench: both). parity and demo always compare the two.

        LAYERS: one or more of --op NAME or --expr "FORMULA", each followed by its own
          --param k=v and --weights k=FILE.npy (one Float32 per channel); several run
          fused, as one pass. e.g. --op Linear --param scale=2 --op Swish --param beta=0.5
          or --expr "max(x, alpha * x)" --param alpha=0.1

        --json (devices, ops, inspect, run, generate, bench, profile): one JSON object with a "schema" field
          (Docs/JSON.md). --threads N (every command that computes: apply, parity, run, generate,
          train, demo, bench, profile, conformance, inspect, whose loading folds constants): the CPU
          evaluator's threads, default the cores the process may use.
        --layer OPTYPE='FORMULA' (run, train, inspect, profile): a model's nodes of that op type, in any
          domain, run as the formula, e.g. --layer ArticleSwish='x * sigmoid(beta * x)'; the
          node's attributes are its parameters, its constant inputs its per-channel weights.

        exit status: 0 success; 1 an error in a file, a model or a device, or parity FAIL;
          2 anything wrong on the command line. An error is one line on standard error.

        --repeat and --warmup take 1 to \(ValueParsing.maximumCount) and 0 to \(ValueParsing.maximumCount).

        environment:
          LAYERKIT_DEVICE=<index|name>  pick a Vulkan device
          LAYERKIT_VALIDATION=1         enable Khronos validation
        """

    /// Runs `arguments` (without the program name); returns the exit status:
    /// 0 success, 1 failure (an error in a file, a model or a device, or
    /// parity FAIL), 2 usage error (anything wrong on the command line, its
    /// values included). An error is one line on standard error: the
    /// command's notices wait until it ends and are dropped when it fails.
    public static func main(_ arguments: [String], console: Console = .standard) -> Int32 {
        guard let first = arguments.first else {
            console.writeError(usage + "\n")
            return 2
        }
        let command = first.lowercased()
        let rest = Array(arguments.dropFirst())
        let notes = NoteBuffer(console)
        do {
            let status = try dispatch(command, typed: first, rest, console: console.deferringNotes(to: notes))
            notes.flush()
            return status
        } catch let error as UsageError {
            notes.discard()
            console.note("error: \(error)")
            return 2
        } catch {
            notes.discard()
            console.note("error: \(error)")
            return 1
        }
    }

    /// Runs the command `command` (lowercased; `typed` as given).
    private static func dispatch(_ command: String, typed: String, _ rest: [String], console: Console) throws -> Int32 {
        if let help = CommandHelp.named(command), rest.contains(where: { $0 == "--help" || $0 == "-h" }) {
            console.printLines(help.text)
            return 0
        }
        do {
            switch command {
            case "devices": return try DevicesCommand.run(rest, console: console)
            case "ops": return try OpsCommand.run(rest, console: console)
            case "apply": return try ApplyCommand.run(rest, console: console)
            case "parity": return try ParityCommand.run(rest, console: console)
            case "demo": return try DemoCommand.run(rest, console: console)
            case "inspect": return try InspectCommand.run(rest, console: console)
            case "run": return try RunCommand.run(rest, console: console)
            case "generate": return try GenerateCommand.run(rest, console: console)
            case "train": return try TrainCommand.run(rest, console: console)
            case "bench": return try BenchCommand.run(rest, console: console)
            case "profile": return try ProfileCommand.run(rest, console: console)
            case "conformance": return try ConformanceCommand.run(rest, console: console)
            case "help", "--help", "-h":
                if rest.count > 1 { throw UsageError("help takes one command name, got \(rest.count)") }
                if let name = rest.first {
                    guard let help = CommandHelp.named(name) else { throw unknownCommand(name) }
                    console.printLines(help.text)
                } else {
                    console.printLines(usage)
                }
                return 0
            case "--version", "version":
                guard rest.isEmpty else { throw UsageError("--version takes no arguments") }
                console.print("layerkit \(LayerKitVersion.description)")
                return 0
            default:
                throw unknownCommand(typed)
            }
        }
    }

    private static func unknownCommand(_ word: String) -> UsageError {
        let names = CommandHelp.all.map(\.name) + ["help"]
        let hint = NameSuggestion.closest(to: word, among: names).map { "did you mean '\($0)'? " } ?? ""
        return UsageError("unknown command '\(word)' (\(hint)commands: \(names.joined(separator: ", ")))")
    }
}
