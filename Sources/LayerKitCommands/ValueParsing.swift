import LayerKit

/// Parsers for the value syntaxes the commands share; each error says
/// what was expected.
package enum ValueParsing {
    /// Runs `body`, which checks values typed on the command line (an op
    /// name, a parameter, a formula): whatever it throws is a usage error
    /// (exit status 2), with the same message, after `option` ("--normalize: ")
    /// when one is given.
    package static func onCommandLine<T>(option: String? = nil, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as UsageError { throw error } catch {
            throw UsageError((option.map { "\($0): " } ?? "") + "\(error)")
        }
    }

    /// The shared registry's entry for an op name typed on the command line;
    /// an unknown name is a usage error that points at `layerkit ops`.
    package static func registeredOp(_ name: String) throws -> LayerRegistry.Entry {
        do {
            return try LayerRegistry.shared.entry(named: name)
        } catch LayerKitError.unknownOp(let message) {
            throw UsageError("\(message) (layerkit ops lists them)")
        } catch {
            throw UsageError("\(error)")
        }
    }

    /// `1x6x256x256` → `[1, 6, 256, 256]`: 1 to 4 positive extents.
    package static func shape(_ text: String) throws -> [Int] {
        let parts = text.split(separator: "x", omittingEmptySubsequences: false)
        let extents = parts.compactMap { Int($0) }
        guard extents.count == parts.count, (1...4).contains(extents.count), extents.allSatisfy({ $0 > 0 }) else {
            throw UsageError("--shape \(text): expected 1 to 4 positive integers joined by x, e.g. 1x6x256x256")
        }
        _ = try Tensor.elementCount(of: extents)
        return extents
    }

    /// `-10,10` → `-10...10`: finite ends, low < high, and a width
    /// (HIGH - LOW) that is itself a finite Float, since a random value is
    /// drawn as LOW + u * (HIGH - LOW) (-3.4e38,3.4e38 is refused).
    package static func range(_ text: String) throws -> ClosedRange<Float> {
        let parts = text.split(separator: ",").map { Float($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 2, let low = parts[0], let high = parts[1],
              low.isFinite, high.isFinite, low < high, (high - low).isFinite else {
            throw UsageError("--range \(text): expected LOW,HIGH with finite LOW < HIGH and a finite width "
                             + "HIGH - LOW (at most \(Float.greatestFiniteMagnitude)), e.g. -10,10")
        }
        return low...high
    }

    /// `beta=0.5` → `("beta", "0.5")`, `approximate=tanh` → `("approximate", "tanh")`:
    /// the layer reads numbers from the text and rejects what it cannot use.
    package static func parameter(_ text: String) throws -> (String, String) {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw UsageError("--param \(text): expected NAME=VALUE, e.g. beta=0.5")
        }
        return (parts[0], parts[1])
    }

    /// `beta=w.npy` → `("beta", "w.npy")`.
    package static func weights(_ text: String) throws -> (String, String) {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw UsageError("--weights \(text): expected NAME=FILE.npy, e.g. beta=w.npy")
        }
        return (parts[0], parts[1])
    }

    /// A non-negative integer seed.
    package static func seed(_ text: String) throws -> UInt64 {
        guard let seed = UInt64(text) else { throw UsageError("--seed \(text): expected a non-negative integer") }
        return seed
    }

    /// `--backend` in every command that computes: `cpu`, `gpu` or `auto`
    /// → `.cpuOnly`, `.gpu` (required: opening it throws without a device)
    /// or `.automatic`.
    package static func backend(_ text: String) throws -> ComputeUnits {
        guard let units = backendWords[text.lowercased()] else {
            throw UsageError("--backend \(text): expected cpu, gpu or auto")
        }
        return units
    }

    /// `--backend` where a command compares the CPU and the GPU: the words
    /// of `backend(_:)`, or `both` (nil), the CPU and the GPU side by side.
    package static func backendOrBoth(_ text: String) throws -> ComputeUnits? {
        if text.lowercased() == "both" { return nil }
        guard let units = backendWords[text.lowercased()] else {
            throw UsageError("--backend \(text): expected cpu, gpu, auto or both")
        }
        return units
    }

    private static let backendWords: [String: ComputeUnits] = ["cpu": .cpuOnly, "gpu": .gpu, "auto": .automatic]

    /// The most any count option (`--repeat`, `--warmup`) takes: a count
    /// sizes loops and the arrays of timings, so an absurd one must be a
    /// usage error, not a reservation abort or a run that never ends.
    package static let maximumCount = 100_000

    /// A whole number from `minimum` to `maximum`, the value of option
    /// `name` (e.g. `--repeat 30`).
    package static func count(_ text: String, option name: String, minimum: Int,
                              maximum: Int = maximumCount) throws -> Int {
        guard let number = Int(text), number >= minimum, number <= maximum else {
            throw UsageError("\(name) \(text): expected a whole number from \(minimum) to \(maximum)")
        }
        return number
    }
}
