import Foundation
import LayerKitONNX

/// The layers an importer made, kept across the plans of one model: a plan
/// for new input values (integer inputs, inputs read at prepare) or one made
/// again after the plan cache dropped it takes the same layer objects, with
/// their packed weights and their GPU pipelines (`PerContext`), wherever a
/// node sees the same input shapes and the same constants. A node's
/// conversion is a function of exactly those (and the node), so the key is
/// sound; a new shape converts again.
///
/// Entries live while one of the last `capacity` imports used them, as plans
/// live in `Model`'s cache. Thread-safe.
final class ConvertedNodeCache: @unchecked Sendable {
    struct Key: Hashable {
        let position: Int
        let shapes: [[Int]?]
        let constants: [ONNXTensor?]
    }

    private let lock = NSLock()
    private var entries: [Key: ConvertedNode] = [:]
    /// The keys each recent import used, oldest first.
    private var imports: [Set<Key>] = []
    private let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    /// The cached conversion for `key`, or `convert`'s, recorded as used by
    /// the current import (`startImport()`).
    func converted(_ key: Key, convert: () throws -> ConvertedNode) rethrows -> ConvertedNode {
        lock.lock()
        let found = entries[key]
        lock.unlock()
        let converted = try found ?? convert()
        lock.lock(); defer { lock.unlock() }
        entries[key] = converted
        if imports.isEmpty { imports.append([]) }
        imports[imports.count - 1].insert(key)
        return converted
    }

    /// Starts an import: entries no import among the last `capacity` used are dropped.
    func startImport() {
        lock.lock(); defer { lock.unlock() }
        imports.append([])
        while imports.count > capacity { imports.removeFirst() }
        let live = imports.reduce(into: Set<Key>()) { $0.formUnion($1) }
        entries = entries.filter { live.contains($0.key) }
    }
}
