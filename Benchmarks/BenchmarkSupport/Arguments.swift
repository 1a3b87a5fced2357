import LayerKit

/// Parsers for the flag values the benchmark executables share.
public enum Arguments {
    /// `text` as a whole number >= 1 (>= 0 with `allowZero`); throws a message naming `flag`.
    public static func positive(_ flag: String, _ text: String?, allowZero: Bool = false) throws -> Int {
        guard let text, let value = Int(text), value >= (allowZero ? 0 : 1) else {
            throw LayerKitError.invalidParameter("\(flag) needs a whole number \(allowZero ? ">= 0" : ">= 1")")
        }
        return value
    }

    /// `text` as a tensor shape of 1 to 4 positive sizes, like 1x64x256x256.
    public static func shape(_ text: String?) throws -> [Int] {
        let dims = text?.split(separator: "x").map { Int($0) } ?? []
        guard !dims.isEmpty, dims.count <= 4, dims.allSatisfy({ ($0 ?? 0) >= 1 }) else {
            throw LayerKitError.invalidParameter("--shape needs 1 to 4 positive sizes like 1x64x256x256")
        }
        return dims.compactMap { $0 }
    }
}
