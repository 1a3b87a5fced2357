import Foundation

/// A layer another layer runs on some paths only, made on first use and
/// kept for the last key (an input shape): the layer a backward pass runs
/// for a forward layer (a Conv's ConvTranspose, a Gemm's transposed
/// product; made anew at every step, it would prepare and upload its GPU
/// weights again at every step), or a Gemm's GPU form (a copy of the
/// weights a CPU-only run never needs). Thread-safe.
final class KeyedLayerCache<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: (key: [Int], layer: Value)?

    /// The stored layer, if one was made, without making one.
    var current: Value? {
        lock.lock(); defer { lock.unlock() }
        return stored?.layer
    }

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
