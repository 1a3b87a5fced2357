import BenchmarkSupport
import LayerKitCommands
import LayerKit

/// SwishBench's command line.
struct Options {
    var runs = 30
    var warmup = 5
    var shape = [1, 64, 256, 256]
    var json = false

    static let usage = """
        usage: SwishBench [--repeat N] [--warmup N] [--shape NxCxHxW] [--json]
          --repeat N   timed runs per variant (default 30; the naive loop gets a third, at least 3)
          --warmup N   untimed runs first (default 5; the naive loop gets 1)
          --shape S    tensor shape (default 1x64x256x256)
          --json       one JSON object per variant instead of the table
        """

    /// Parses `arguments` (without the program name); throws a message on bad input.
    init(arguments: [String]) throws {
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            switch flag {
            case "--repeat": runs = try ValueParsing.count(rest.popFirst() ?? "", option: flag, minimum: 1)
            case "--warmup": warmup = try ValueParsing.count(rest.popFirst() ?? "", option: flag, minimum: 0)
            case "--shape": shape = try ValueParsing.shape(rest.popFirst() ?? "")
            case "--json": json = true
            case "-h", "--help": throw LayerKitError.invalidParameter(Options.usage)
            default: throw LayerKitError.invalidParameter("unknown option \(flag)\n\(Options.usage)")
            }
        }
    }
}
