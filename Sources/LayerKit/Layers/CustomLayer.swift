import Foundation

/// A user-defined layer: Core ML's `MLCustomLayer`, with `Tensor` for
/// `MLMultiArray` and `SliceImage` for `MTLTexture`. It is found by name
/// (`--op`, or a model node's op type), made from a parameter dictionary and
/// given its weights as blobs, the way Core ML makes the class named in a
/// model's `className`.
///
/// `evaluate` (CPU) is required; `encode` (GPU) is optional.
public protocol CustomLayer: Layer {
    /// The name the layer is registered under (`--op` on the command line).
    static var name: String { get }

    /// The names of the weight blobs `setWeightData` takes, in order
    /// (`--weights NAME=file.npy`). Defaults to none.
    static var weightNames: [String] { get }

    /// Makes the layer from its parameters (numbers as `Double`, `Float`,
    /// `Int` or `NSNumber`); unknown or ill-typed parameters throw.
    init(parameters: [String: Any]) throws

    /// Receives the layer's weights, each blob Float32 little-endian.
    func setWeightData(_ weights: [Data]) throws
}

extension CustomLayer {
    public static var weightNames: [String] { [] }

    /// Defaults to `Self.name` (a layer type serving several ops names the op).
    public var layerName: String { Self.name }
}

extension Dictionary where Key == String, Value == Any {
    /// Reads a numeric parameter as Float, or `defaultValue` when absent;
    /// throws when the value is not a finite number.
    public func float(_ key: String, default defaultValue: Float, layer: String) throws -> Float {
        guard let raw = self[key] else { return defaultValue }
        let value: Double? = switch raw {
        case let v as Double: v
        case let v as Float: Double(v)
        case let v as Int: Double(v)
        case let v as NSNumber: v.doubleValue
        case let v as String: Double(v)
        default: nil
        }
        guard let value, Float(value).isFinite else {
            throw LayerKitError.invalidParameter("\(layer): parameter '\(key)' must be a finite number, got \(raw)")
        }
        return Float(value)
    }

    /// Throws for any key not in `known`, naming the ones that are.
    public func requireOnly(_ known: [String], layer: String) throws {
        for key in keys.sorted() where !known.contains(key) {
            let list = known.isEmpty ? "none" : known.joined(separator: ", ")
            throw LayerKitError.invalidParameter("\(layer): unknown parameter '\(key)' (known: \(list))")
        }
    }
}

extension Data {
    /// The bytes read as Float32 little-endian values; throws unless the
    /// length is a positive multiple of 4.
    public func float32Values(what: String) throws -> [Float] {
        guard count > 0, count % 4 == 0 else {
            throw LayerKitError.invalidWeights(
                "\(what): \(count) bytes is not a whole number of Float32 values")
        }
        return withUnsafeBytes { raw in
            (0..<count / 4).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
    }
}
