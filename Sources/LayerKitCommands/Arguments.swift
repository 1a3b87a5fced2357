import LayerKit

/// A usage error: the command line itself is wrong (exit status 2).
package struct UsageError: Error, CustomStringConvertible {
    package let description: String
    package init(_ message: String) { description = message }
}

/// The options of one subcommand, parsed from `--name value` pairs and
/// `--flag`s, in order. Each command declares what it accepts; anything else
/// is a usage error naming the option.
struct Arguments {
    /// Options in command-line order, so a repeated option keeps its order.
    private(set) var options: [(name: String, value: String?)] = []
    /// Words that are not options (e.g. a model path).
    private(set) var positional: [String] = []

    /// Parses `words` as `command` declares its options: an unknown option
    /// (with the closest known one), a single-value option given twice, or
    /// more words than the command takes is a usage error.
    init(_ words: [String], command: CommandHelp) throws {
        try self.init(words, valued: command.valued, flags: command.flags)
        for (i, option) in options.enumerated() where !command.repeatable.contains(option.name) {
            if options[..<i].contains(where: { $0.name == option.name }) {
                throw UsageError("\(option.name) is given twice; \(command.name) takes it once")
            }
        }
        guard positional.count <= command.positional.upperBound else {
            let extra = positional[command.positional.upperBound]
            let takes = command.positional.upperBound == 0 ? "takes no arguments besides its options"
                : "takes one \(command.name == "ops" ? "op name" : "model file (.onnx)")"
            throw UsageError("unexpected argument '\(extra)': \(command.name) \(takes) (layerkit help \(command.name))")
        }
    }

    /// Parses `words` given the option names that take a value and those that don't.
    init(_ words: [String], valued: Set<String>, flags: Set<String> = []) throws {
        var index = 0
        while index < words.count {
            let word = words[index]
            index += 1
            guard word.hasPrefix("--") else {
                positional.append(word)
                continue
            }
            // Accept --name=value as well as --name value.
            let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
            let name = parts[0]
            if flags.contains(name) {
                guard parts.count == 1 else { throw UsageError("\(name) takes no value") }
                options.append((name, nil))
            } else if valued.contains(name) {
                if parts.count == 2 {
                    options.append((name, parts[1]))
                } else {
                    guard index < words.count else { throw UsageError("\(name) needs a value") }
                    options.append((name, words[index]))
                    index += 1
                }
            } else {
                let known = (valued.union(flags)).sorted()
                let hint = NameSuggestion.closest(to: name, among: known).map { "did you mean \($0)? " } ?? ""
                throw UsageError("unknown option \(name) (\(hint)this command takes: \(known.joined(separator: " ")))")
            }
        }
    }

    /// The last value given for `name`, if any.
    func value(_ name: String) -> String? {
        options.last { $0.name == name }?.value
    }

    /// Every value given for `name`, in order.
    func values(_ name: String) -> [String] {
        options.filter { $0.name == name }.compactMap(\.value)
    }

    /// Whether the flag `name` was given.
    func has(_ name: String) -> Bool {
        options.contains { $0.name == name }
    }

    /// The value of `name`, which must be given.
    func required(_ name: String) throws -> String {
        guard let value = value(name) else { throw UsageError("missing \(name)") }
        return value
    }

    /// The whole number given for `name` (at least `minimum`), or `value` when absent.
    func count(_ name: String, default value: Int, minimum: Int) throws -> Int {
        guard let text = self.value(name) else { return value }
        return try ValueParsing.count(text, option: name, minimum: minimum)
    }
}
