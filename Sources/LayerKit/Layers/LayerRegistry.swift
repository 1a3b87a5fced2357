import Foundation

/// Layers by name, as Core ML finds a custom layer by `className`. Names
/// match case-insensitively. The catalog's element-wise ops (and `Swish`)
/// are registered up front; users add their own classes with `register(_:)`,
/// formulas with `register(formula:named:)`, and layers made by a closure with
/// `register(named:make:)`.
public final class LayerRegistry: @unchecked Sendable {
    /// How to make one registered layer. (Unchecked: `make` captures a
    /// layer class, whose metatype Swift cannot prove Sendable, or a
    /// registered closure; either is immutable and only constructs.)
    public struct Entry: @unchecked Sendable {
        /// The registered name.
        public let name: String
        /// The weight blobs `setWeightData` takes, in order.
        public let weightNames: [String]
        /// The op's declaration, for catalog ops.
        public let definition: OpDefinition?
        /// Makes the layer from its parameters.
        public let make: ([String: Any]) throws -> CustomLayer
        /// Makes the layer of a model node from its attributes and its
        /// constant inputs by name (`register(formula:forNodesOfType:)`);
        /// nil: `make`, then the constants in input order to `setWeightData`.
        var makeForNode: (([String: Any], [(name: String, data: Data)]) throws -> CustomLayer)? = nil
    }

    /// The process-wide registry, holding the built-in layers.
    public static let shared = LayerRegistry()

    private let lock = NSLock()
    private var entries: [String: Entry] = [:]

    /// A registry holding the built-in layers only (a model loaded with it
    /// sees none of the classes registered in `shared`).
    public init() {
        for definition in OpDefinition.catalog {
            add(Entry(name: definition.name, weightNames: definition.weightNames, definition: definition) {
                try ElementwiseLayer(definition: definition, parameters: $0)
            })
        }
        register(Swish.self)
    }

    /// Registers `layer` under `layer.name`, replacing any layer of that name.
    public func register(_ layer: CustomLayer.Type) {
        let definition = (layer as? ElementwiseLayer.Type).flatMap { type in
            OpDefinition.catalog.first { $0.name == type.name }
        }
        // A catalog op's weights are its definition's (a static property
        // redeclared in a subclass would not be reached through the protocol).
        add(Entry(name: layer.name, weightNames: definition?.weightNames ?? layer.weightNames,
                  definition: definition) {
            try layer.init(parameters: $0)
        })
    }

    /// Registers the layers `make` makes under `name`, replacing any layer
    /// of that name: for layers defined at run time rather than one type per
    /// name (the C API's callback layers). `make` receives the parameters of
    /// `makeLayer(named:parameters:)` or of a model node's attributes, as
    /// `init(parameters:)` would; `weightNames` are the blobs its layers'
    /// `setWeightData` takes, in order.
    public func register(named name: String, weightNames: [String] = [],
                         make: @escaping ([String: Any]) throws -> CustomLayer) {
        add(Entry(name: name, weightNames: weightNames, definition: nil, make: make))
    }

    func add(_ entry: Entry) {
        lock.lock(); defer { lock.unlock() }
        entries[entry.name.lowercased()] = entry
    }

    /// Every entry, in the catalog's order, then user layers by name.
    public var all: [Entry] {
        lock.lock(); defer { lock.unlock() }
        let order = OpDefinition.catalog.map(\.name)
        return entries.values.sorted { a, b in
            let (i, j) = (order.firstIndex(of: a.name) ?? order.count, order.firstIndex(of: b.name) ?? order.count)
            return i != j ? i < j : a.name < b.name
        }
    }

    /// The entry registered as `name`, matched case-insensitively.
    public func entry(named name: String) throws -> Entry {
        lock.lock(); defer { lock.unlock() }
        guard let entry = entries[name.lowercased()] else {
            let hint = NameSuggestion.hint(for: name, among: entries.values.map(\.name).sorted())
            throw LayerKitError.unknownOp("unknown op '\(name)'\(hint): no layer is registered by that name")
        }
        return entry
    }

    /// The end of a model's error for a node that no registered layer runs:
    /// `register a layer named 'OP'`, the same for every API. A front end
    /// finds it (`missingLayer(in:)`) to add how its users register one
    /// (Swift: `LayerRegistry.register(_:)`; the command line: `--layer`;
    /// Python: `layers=`).
    public static func missingLayerAdvice(_ opType: String) -> String { "register a layer named '\(opType)'" }

    /// The op type an error's message asks to register (its
    /// `missingLayerAdvice`), or nil when it asks for none.
    public static func missingLayer(in message: String) -> String? {
        let marker = "register a layer named '"
        guard let start = message.range(of: marker)?.upperBound,
              let end = message[start...].firstIndex(of: "'") else { return nil }
        return String(message[start..<end])
    }

    /// Makes the layer `name` with `parameters` and optional `weights`.
    public func makeLayer(named name: String, parameters: [String: Any] = [:],
                          weights: [Data] = []) throws -> CustomLayer {
        let layer = try entry(named: name).make(parameters)
        if !weights.isEmpty { try layer.setWeightData(weights) }
        return layer
    }
}
