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
