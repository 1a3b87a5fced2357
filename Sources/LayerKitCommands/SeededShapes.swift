import LayerKit

/// The shapes of the seeded inputs `bench` and `profile` make for a model
/// without `--input` files: `--shape NAME=DIMS` (or `DIMS` for a one-input
/// model) gives an input's whole shape, `--dim SYMBOL=N` a symbolic
/// dimension's size wherever it appears (a free batch dimension, say);
/// other symbolic dimensions are 1.
struct SeededShapes {
    private var shapes: [String: [Int]] = [:]
    private var symbols: [String: Int] = [:]

    /// Whether neither option was given.
    var isEmpty: Bool { shapes.isEmpty && symbols.isEmpty }

    /// Parses the model's `--shape` and `--dim` words, checked against its inputs.
    init(_ arguments: Arguments, of model: Model) throws {
        let names = model.inputs.map(\.name)
        for spec in arguments.values("--shape") {
            let parts = spec.split(separator: "=", maxSplits: 1).map(String.init)
            let (name, dims) = parts.count == 2 ? (parts[0], parts[1]) : (names.count == 1 ? names[0] : "", spec)
            guard let input = model.inputs.first(where: { $0.name == name }) else {
                throw UsageError("--shape \(spec): " + (parts.count == 2
                    ? "the model has no input '\(name)'" + NameSuggestion.hint(for: name, among: names)
                    : "the model has \(names.count) inputs") + " (its inputs: \(names.joined(separator: ", ")); give NAME=DIMS)")
            }
            let extents = dims.split(separator: "x", omittingEmptySubsequences: false).map { Int($0) }
            guard extents.allSatisfy({ ($0 ?? 0) > 0 }) else {
                throw UsageError("--shape \(spec): expected NAME=DIMS, positive sizes joined by x, e.g. \(name)=8x3x224x224")
            }
            let shape = extents.compactMap { $0 }
            let wanted = input.dimensions
            guard shape.count == wanted.count,
                  zip(shape, wanted).allSatisfy({ size, dimension in dimension.size.map { $0 == size } ?? true }) else {
                throw UsageError("--shape \(spec): input '\(name)' is [\(wanted.map(\.description).joined(separator: ", "))]; "
                                 + "give its fixed sizes as they are")
            }
            guard shapes.updateValue(shape, forKey: name) == nil else { throw UsageError("--shape: '\(name)' is given twice") }
            _ = try Tensor.elementCount(of: shape)
        }
        let known = Set(model.inputs.flatMap(\.dimensions).compactMap { dimension -> String? in
            if case .symbol(let symbol) = dimension { return symbol }
            return nil
        })
        for spec in arguments.values("--dim") {
            let parts = spec.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let size = Int(parts[1]), size > 0 else {
                throw UsageError("--dim \(spec): expected SYMBOL=N with N a positive size, e.g. batch=8")
            }
            guard known.contains(parts[0]) else {
                throw UsageError("--dim \(spec): no input has a dimension '\(parts[0])'" + (known.isEmpty
                    ? " (every input dimension is fixed)" : " (the symbolic dimensions: \(known.sorted().joined(separator: ", ")))"))
            }
            guard symbols.updateValue(size, forKey: parts[0]) == nil else { throw UsageError("--dim: '\(parts[0])' is given twice") }
        }
    }

    /// `input`'s seeded shape.
    func shape(of input: Model.ValueDescription) throws -> [Int] {
        if let shape = shapes[input.name] { return shape }
        let shape = input.dimensions.map { dimension -> Int in
            switch dimension {
            case .size(let size): size
            case .symbol(let symbol): symbols[symbol] ?? 1
            }
        }
        _ = try Tensor.elementCount(of: shape)
        return shape
    }
}
