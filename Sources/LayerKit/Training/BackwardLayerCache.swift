import Foundation

/// The layer a backward pass runs for a forward layer (a Conv's
/// ConvTranspose, a Gemm's transposed product), made on first use and kept
/// for the last input shape: a layer made anew at every step would prepare
/// again (its GPU weights uploaded again) at every step. Thread-safe.
final class BackwardLayerCache<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: (key: [Int], layer: Value)?

    /// The layer for `key` (an input shape): the stored one, or `make()`'s, stored.
    func layer(for key: [Int], make: () throws -> Value) rethrows -> Value {
        lock.lock()
        defer { lock.unlock() }
        if let stored, stored.key == key { return stored.layer }
        let layer = try make()
        stored = (key, layer)
        return layer
    }
}
