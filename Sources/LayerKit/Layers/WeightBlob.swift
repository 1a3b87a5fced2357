import Foundation

/// A weight blob as `CustomLayer.setWeightData(_:)` receives it: Float32
/// values, little-endian, as Core ML passes them.
public enum WeightBlob {
    /// The values of `blob`; throws `LayerKitError.invalidWeights`, naming
    /// `what` (e.g. `Linear weights 'scale'`), unless its length is a positive
    /// multiple of 4.
    public static func float32Values(_ blob: Data, what: String) throws -> [Float] {
        guard blob.count > 0, blob.count % 4 == 0 else {
            throw LayerKitError.invalidWeights("\(what): \(blob.count) bytes is not a whole number of Float32 values")
        }
        return blob.withUnsafeBytes { raw in
            (0..<blob.count / 4).map {
                Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self)))
            }
        }
    }
}
