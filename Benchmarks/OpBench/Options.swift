import BenchmarkSupport
import LayerKitCommands
import LayerKit

/// OpBench's command line.
struct Options {
    /// The ops to time, catalog order.
    var ops = OpDefinition.catalog
    var runs = 30
    var warmup = 5
    var shape = [1, 64, 256, 256]
    var json = false
    var gpu = true
    /// Print the catalog's op names, one a line, and time nothing.
    var list = false

    static let usage = """
        usage: OpBench [--op NAME|all] [--repeat N] [--warmup N] [--shape NxCxHxW] [--no-gpu] [--json] [--list]
          --op NAME       one catalog op (case-insensitive), or all (default)
          --repeat N      timed runs per variant (default 30)
          --warmup N      untimed runs first (default 5)
          --shape S       tensor shape (default 1x64x256x256)
          --no-gpu        CPU rows only
          --json          one JSON object per row instead of the table
          --list          print the catalog's op names, one a line, and exit
        """

    /// Parses `arguments` (without the program name); throws a message on bad input.
    init(arguments: [String]) throws {
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            switch flag {
            case "--op": ops = try Options.ops(rest.popFirst())
            case "--repeat": runs = try ValueParsing.count(rest.popFirst() ?? "", option: flag, minimum: 1)
            case "--warmup": warmup = try ValueParsing.count(rest.popFirst() ?? "", option: flag, minimum: 0)
            case "--shape": shape = try ValueParsing.shape(rest.popFirst() ?? "")
            case "--no-gpu": gpu = false
            case "--list": list = true
            case "--json": json = true
            case "-h", "--help": throw LayerKitError.invalidParameter(Options.usage)
            default: throw LayerKitError.invalidParameter("unknown option \(flag)\n\(Options.usage)")
            }
        }
    }

    private static func ops(_ name: String?) throws -> [OpDefinition] {
        guard let name, name.lowercased() != "all" else { return OpDefinition.catalog }
        guard let op = OpDefinition.catalog.first(where: { $0.name.lowercased() == name.lowercased() }) else {
            throw LayerKitError.unknownOp("--op: unknown op '\(name)'; ops: "
                + OpDefinition.catalog.map(\.name).joined(separator: ", "))
        }
        return [op]
    }
}
