import Foundation

/// What a layer made for each GPU context it was prepared on (pipelines,
/// constant buffers), so one layer object can serve several contexts, and
/// within a context for each key its state depends on besides (a
/// convolution's block, chosen from the input shape: one layer serves the
/// plans of every input shape). The
/// context is held weakly: a closed context's state is dropped, never handed
/// to a new context at the same address. Thread-safe.
final class PerContext<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [(context: WeakContext, key: AnyHashable, value: Value)] = []

    private struct WeakContext { weak var context: GPUContext? }

    /// The value for `context`, made by `make` the first time (made under the
    /// lock, so two threads never make it twice).
    func value(on context: GPUContext, make: () throws -> Value) rethrows -> Value {
        try value(on: context, key: 0, make: make)
    }

    /// Every value with its context and key (of contexts still open): what
    /// a successor layer takes over with `store(_:on:key:)`.
    var values: [(context: GPUContext, key: AnyHashable, value: Value)] {
        lock.lock(); defer { lock.unlock() }
        return entries.compactMap { entry in entry.context.context.map { ($0, entry.key, entry.value) } }
    }

    /// Stores `value` for `context` and `key`, replacing what was there.
    func store(_ value: Value, on context: GPUContext, key: AnyHashable) {
        lock.lock(); defer { lock.unlock() }
        entries.removeAll { $0.context.context == nil || ($0.context.context === context && $0.key == key) }
        entries.append((WeakContext(context: context), key, value))
    }

    /// The value for `context` and `key`, made by `make` the first time.
    func value(on context: GPUContext, key: AnyHashable, make: () throws -> Value) rethrows -> Value {
        lock.lock(); defer { lock.unlock() }
        if let found = entries.first(where: { $0.context.context === context && $0.key == key }) { return found.value }
        entries.removeAll { $0.context.context == nil }
        let value = try make()
        entries.append((WeakContext(context: context), key, value))
        return value
    }
}
