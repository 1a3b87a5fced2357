import Foundation

/// Reads a layer's parameter dictionary, the one Core ML's
/// `init(parameters:)` passes (numbers as `Double`, `Float`, `Int`,
/// `NSNumber` or numeric text), naming the layer in every error:
///
/// ```swift
/// let reader = LayerParameters(parameters, layer: Self.name)
/// gain = try reader.float("gain", default: 1)
/// try reader.requireOnly(["gain"])
/// ```
public struct LayerParameters {
    /// The dictionary as given.
    public let values: [String: Any]
    /// The layer the errors name.
    public let layer: String

    /// Reads `parameters` of the layer named `layer`.
    public init(_ parameters: [String: Any], layer: String) {
        values = parameters
        self.layer = layer
    }

    /// The parameter `name` as a Float, or `defaultValue` when absent;
    /// throws `LayerKitError.invalidParameter` when it is not a finite number.
    public func float(_ name: String, default defaultValue: Float) throws -> Float {
        guard let raw = values[name] else { return defaultValue }
        let value: Double? = switch raw {
        case let v as Double: v
        case let v as Float: Double(v)
        case let v as Int: Double(v)
        case let v as NSNumber: v.doubleValue
        case let v as String: Double(v)
        default: nil
        }
        guard let value, Float(value).isFinite else {
            throw LayerKitError.invalidParameter("\(layer): parameter '\(name)' must be a finite number, got \(raw)")
        }
        return Float(value)
    }

    /// Throws `LayerKitError.invalidParameter` for the first parameter (in
    /// name order) not among `names`, listing the ones the layer knows.
    public func requireOnly(_ names: [String]) throws {
        for key in values.keys.sorted() where !names.contains(key) {
            let list = names.isEmpty ? "none" : names.joined(separator: ", ")
            throw LayerKitError.invalidParameter("\(layer): unknown parameter '\(key)' (known: \(list))")
        }
    }
}
