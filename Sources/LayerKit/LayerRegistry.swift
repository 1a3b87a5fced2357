import Foundation

/// Layer classes by name, as Core ML finds a custom layer by `className`.
/// Names match case-insensitively. Built-ins are registered up front; users
/// add their own with `register(_:)`.
public final class LayerRegistry: @unchecked Sendable {
    /// The process-wide registry, holding the built-in layers.
    public static let shared = LayerRegistry(builtins: [Swish.self])

    private let lock = NSLock()
    private var layers: [String: CustomLayer.Type] = [:]

    init(builtins: [CustomLayer.Type]) {
        builtins.forEach(register)
    }

    /// Registers `layer` under `layer.name`, replacing any layer of that name.
    public func register(_ layer: CustomLayer.Type) {
        lock.lock(); defer { lock.unlock() }
        layers[layer.name.lowercased()] = layer
    }

    /// The registered names, sorted.
    public var names: [String] {
        lock.lock(); defer { lock.unlock() }
        return layers.values.map { $0.name }.sorted()
    }

    /// The class registered as `name`, matched case-insensitively.
    public func layerType(named name: String) throws -> CustomLayer.Type {
        lock.lock(); defer { lock.unlock() }
        guard let layer = layers[name.lowercased()] else {
            let known = layers.values.map { $0.name }.sorted().joined(separator: ", ")
            throw LayerKitError.unknownOp("unknown op '\(name)' (known: \(known))")
        }
        return layer
    }

    /// Makes the layer `name` with `parameters` and optional `weights`.
    public func makeLayer(named name: String, parameters: [String: Any] = [:],
                          weights: [Data] = []) throws -> CustomLayer {
        let layer = try layerType(named: name).init(parameters: parameters)
        if !weights.isEmpty { try layer.setWeightData(weights) }
        return layer
    }
}
