import Foundation
import LayerKitONNX

/// The layers an importer made, kept across the plans of one model, so that
/// a model is imported once and planned per shape: a plan for a new input
/// shape, for new input values (integer inputs, inputs read at prepare) or
/// one made again after `Model`'s plan cache dropped it takes the same layer
/// objects, with their packed weights and their GPU state (`PerContext`),
/// wherever a node sees the same constants and agrees on what its
/// conversion read of its input shapes (`ShapeReads`: a Conv reads the
/// rank, so one layer serves every batch and image size). A conversion is a
/// function of exactly those (and the node), so the reuse is sound; a node
/// whose conversion read an extent that changed converts again.
///
/// Entries live while one of the last `capacity` imports used them, as plans
/// live in `Model`'s cache. Thread-safe.
final class ConvertedNodeCache: @unchecked Sendable {
    /// A node and its constant inputs (nil where an input is computed).
    struct Key: Hashable {
        let position: Int
        let constants: [ONNXTensor?]
    }

    /// One conversion: the shape reads it made, the facts they found, the
    /// layer it made and the last import that used it.
    private struct Entry {
        let reads: [Int: ShapeReads.Depth]
        let facts: [Int: [Int]]
        let converted: ConvertedNode
        var lastImport: Int
    }

    /// A layer a graph pass made from cached layers (a fusion), with them.
    private struct FusedEntry {
        let parts: [Layer]
        let layer: Layer
        var lastImport: Int
    }

    private let lock = NSLock()
    private var entries: [Key: [Entry]] = [:]
    /// The float32 tensors of the file's initializers that steps take as
    /// inputs (a Gather's table, a MatMul's weights), by name: a function of
    /// the file alone, so converted once per model, not once per plan (a
    /// decoder planned per token converted its 154 MB embedding each step).
    /// Kept for the model's life, as the initializers themselves are.
    private var initializerTensors: [String: Tensor] = [:]
    /// What fp16 storage does to each of `initializerTensors`
    /// (`HalfRange(checking:)`), by identity, which the kept tensors
    /// never give up: checked once per model too.
    private var halfRanges: [ObjectIdentifier: HalfRange?] = [:]
    /// Keyed by the parts' identities, which the entry keeps alive (so not reused).
    private var fusedEntries: [[ObjectIdentifier]: FusedEntry] = [:]
    /// The number of the current import (`startImport()`).
    private var currentImport = 0
    private let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    /// The cached conversion of `key` whose shape reads agree with `shapes`
    /// (per node input), or `convert`'s, which records its reads in the
    /// `ShapeReads` it is given.
    func converted(_ key: Key, shapes: [[Int]?], convert: (ShapeReads) throws -> ConvertedNode) rethrows -> ConvertedNode {
        lock.lock()
        if var kept = entries[key], let index = kept.firstIndex(where: { entry in
            entry.reads.allSatisfy { input, depth in ShapeReads.fact(depth, of: shapes[input]) == entry.facts[input] }
        }) {
            kept[index].lastImport = currentImport
            entries[key] = kept
            lock.unlock()
            return kept[index].converted
        }
        lock.unlock()
        let reads = ShapeReads()
        let converted = try convert(reads)
        let depths = reads.depths
        let facts = depths.reduce(into: [Int: [Int]]()) { $0[$1.key] = ShapeReads.fact($1.value, of: shapes[$1.key]) }
        lock.lock(); defer { lock.unlock() }
        entries[key, default: []].append(Entry(reads: depths, facts: facts, converted: converted, lastImport: currentImport))
        return converted
    }

    /// The layer a graph pass made from `parts` (layers of this cache) in an
    /// earlier import, or `make`'s: a fused layer packs its weights once per
    /// model too, not once per input shape. Its parts are the same objects
    /// only where their nodes converted the same, so the fusion is the same.
    func fused<L: Layer>(from parts: [Layer], make: () throws -> L) rethrows -> L {
        let key = parts.map { ObjectIdentifier($0) }
        lock.lock()
        if let entry = fusedEntries[key], let layer = entry.layer as? L {
            fusedEntries[key]?.lastImport = currentImport
            lock.unlock()
            return layer
        }
        lock.unlock()
        let layer = try make()
        lock.lock(); defer { lock.unlock() }
        fusedEntries[key] = FusedEntry(parts: parts, layer: layer, lastImport: currentImport)
        return layer
    }

    /// Initializer `name` as a float32 tensor, made by `make` at its first
    /// use and shared by every later plan (steps only read their constants).
    func initializer(_ name: String, make: () throws -> Tensor) rethrows -> Tensor {
        lock.lock()
        if let tensor = initializerTensors[name] {
            lock.unlock()
            return tensor
        }
        lock.unlock()
        let tensor = try make()
        lock.lock(); defer { lock.unlock() }
        if let made = initializerTensors[name] { return made }
        initializerTensors[name] = tensor
        halfRanges[ObjectIdentifier(tensor)] = .some(HalfRange(checking: tensor))
        return tensor
    }

    /// `HalfRange(checking: tensor)`, remembered for the tensors of
    /// `initializer(_:make:)` and computed for any other (a folded value
    /// may differ from plan to plan).
    func halfRange(of tensor: Tensor) -> HalfRange? {
        lock.lock()
        let known = halfRanges[ObjectIdentifier(tensor)]
        lock.unlock()
        return known ?? HalfRange(checking: tensor)
    }

    /// Starts an import: entries no import among the last `capacity` used are dropped.
    func startImport() {
        lock.lock(); defer { lock.unlock() }
        currentImport += 1
        let oldest = currentImport - capacity + 1
        entries = entries.compactMapValues { kept in
            let live = kept.filter { $0.lastImport >= oldest }
            return live.isEmpty ? nil : live
        }
        fusedEntries = fusedEntries.filter { $0.value.lastImport >= oldest }
    }
}

/// What a node's conversion read of its inputs' shapes, input by input
/// (`ONNXNodeContext.shape(_:)` and `rank(_:)`): the layer it made depends
/// on these and on nothing else of the shapes.
final class ShapeReads: @unchecked Sendable {
    enum Depth: Sendable {
        /// The rank only.
        case rank
        /// Every extent.
        case extents
    }

    private let lock = NSLock()
    private var read: [Int: Depth] = [:]

    /// The deepest read of each input read.
    var depths: [Int: Depth] { lock.lock(); defer { lock.unlock() }; return read }

    func record(_ input: Int, _ depth: Depth) {
        lock.lock(); defer { lock.unlock() }
        if read[input] != .extents { read[input] = depth }
    }

    /// What a read of `depth` finds in `shape`: its rank, or its extents (an
    /// omitted input, nil, finds nothing).
    static func fact(_ depth: Depth, of shape: [Int]?) -> [Int]? {
        guard let shape else { return nil }
        return depth == .rank ? [shape.count] : shape
    }
}
