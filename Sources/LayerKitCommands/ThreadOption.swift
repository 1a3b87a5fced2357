import LayerKit

/// `--threads N`, which every command that computes takes: the CPU
/// evaluator's thread count (`Backend(threads:)`, `Model(threads:)`).
extension Arguments {
    /// The option's name, for the `valued` sets.
    static let threadsOption = "--threads"

    /// `--threads N` (1 to 4096), or nil when absent: the cores the process may use.
    func threads() throws -> Int? {
        try value(Self.threadsOption).map { try ValueParsing.count($0, option: Self.threadsOption, minimum: 1, maximum: 4096) }
    }
}
