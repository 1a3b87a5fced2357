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
            case "--repeat": runs = try Options.positive(flag, rest.popFirst())
            case "--warmup": warmup = try Options.positive(flag, rest.popFirst(), allowZero: true)
            case "--shape": shape = try Options.shape(rest.popFirst())
            case "--json": json = true
            case "-h", "--help": throw LayerKitError.invalidParameter(Options.usage)
            default: throw LayerKitError.invalidParameter("unknown option \(flag)\n\(Options.usage)")
            }
        }
    }

    private static func positive(_ flag: String, _ text: String?, allowZero: Bool = false) throws -> Int {
        guard let text, let value = Int(text), value >= (allowZero ? 0 : 1) else {
            throw LayerKitError.invalidParameter("\(flag) needs a whole number \(allowZero ? ">= 0" : ">= 1")")
        }
        return value
    }

    private static func shape(_ text: String?) throws -> [Int] {
        let dims = text?.split(separator: "x").map { Int($0) } ?? []
        guard !dims.isEmpty, dims.count <= 4, dims.allSatisfy({ ($0 ?? 0) >= 1 }) else {
            throw LayerKitError.invalidParameter("--shape needs 1 to 4 positive sizes like 1x64x256x256")
        }
        return dims.compactMap { $0 }
    }
}
