import LayerKitONNX
import Foundation

/// One ONNX node during import, with what the importer knows about its
/// inputs (shapes, constant data), and typed access to its attributes.
/// Every error it throws names the node and its op.
struct ONNXNodeContext {
    let node: ONNXNode
    /// The default-domain opset the model imports.
    let opset: Int
    /// Per node input: its shape, nil for an omitted optional input. Read
    /// through `shape(_:)` and `rank(_:)`, which record the read.
    private let inputShapes: [[Int]?]
    /// Per node input: the initializer behind it, if it is one.
    let initializers: [ONNXTensor?]
    /// Where a value this node needs at prepare but the graph computes at
    /// run time is recorded, before the error is thrown (`ValueRequests`).
    var requests: ValueRequests? = nil
    /// Where the conversion's reads of input shapes are recorded: what the
    /// layer it makes depends on (`ConvertedNodeCache`).
    var shapeReads: ShapeReads? = nil
    /// Whether the node is computed on zeros standing for values of a later
    /// run, for its output shapes alone (`TypedStep`'s plan): checks of the
    /// values themselves (an unknown category) wait for the run.
    var probing = false
    /// Where a `TypedStep` keeps the float layer its kernel builds from the
    /// node (`memoizedLayer`), so its runs build it once; nil at load.
    var layerMemo: LayerMemo? = nil

    init(node: ONNXNode, opset: Int, inputShapes: [[Int]?], initializers: [ONNXTensor?]) {
        self.node = node
        self.opset = opset
        self.inputShapes = inputShapes
        self.initializers = initializers
    }
    /// This node with `values` as what is known of its inputs (per node
    /// input; shapes unchanged): how a `TypedStep` computes its node on a
    /// run's values.
    func knowing(_ values: [ONNXTensor?]) -> ONNXNodeContext {
        var context = ONNXNodeContext(node: node, opset: opset, inputShapes: inputShapes, initializers: values)
        context.inputTypes = inputTypes
        context.layerMemo = layerMemo
        return context
    }

    /// The layer `make` builds for this node: once per `TypedStep` that
    /// keeps a `layerMemo` (the layer depends on the node's attributes and
    /// the plan's shapes, not on a run's values), each call otherwise.
    func memoizedLayer(_ make: () throws -> Layer?) throws -> Layer? {
        guard let layerMemo else { return try make() }
        return try layerMemo.layer(make)
    }

    /// Per node input: its element type where the importer knows it (a
    /// constant's, or a graph input's declared type), nil otherwise. CastLike
    /// reads its target's type here when the target is a runtime value.
    var inputTypes: [ElementType?] = []

    /// `node 'conv1' (Conv)`, how errors name the node.
    var label: String { "node '\(node.name)' (\(node.opType))" }

    /// An `invalidModel` error about this node.
    func error(_ message: String) -> LayerKitError { .invalidModel("\(label): \(message)") }

    /// `failure` as an error that names this node: any error a layer's
    /// constructor, parameters or shape rules throw ("Conv: group must be
    /// >= 1") gets the node's label, once.
    func naming(_ failure: any Error) -> LayerKitError {
        if let failure = failure as? LayerKitError, failure.description.hasPrefix(label + ": ") { return failure }
        return error("\(failure)")
    }

    /// Whether input `i` is given (present and not the empty name).
    func has(_ i: Int) -> Bool { i < inputShapes.count && inputShapes[i] != nil }

    /// The shape of input `i`, which must be given.
    func shape(_ i: Int) throws -> [Int] {
        guard i < inputShapes.count, let shape = inputShapes[i] else {
            throw error("input \(i) is missing")
        }
        shapeReads?.record(i, .extents)
        return shape
    }

    /// The rank of input `i`, which must be given: what a conversion that
    /// does not depend on the extents reads, so that its layer serves
    /// every input shape of that rank.
    func rank(_ i: Int) throws -> Int {
        guard i < inputShapes.count, let shape = inputShapes[i] else {
            throw error("input \(i) is missing")
        }
        shapeReads?.record(i, .rank)
        return shape.count
    }

    /// Input `i` as Float32 data, which must be an initializer (weights,
    /// a reshape target...): LayerKit does not compute these at run time.
    func constant(_ i: Int, _ what: String) throws -> Tensor {
        guard let tensor = try optionalConstant(i, what) else { throw error("\(what) (input \(i)) is missing") }
        return tensor
    }

    /// Input `i` as Float32 data when given; throws when it is computed.
    func optionalConstant(_ i: Int, _ what: String) throws -> Tensor? {
        guard has(i) else { return nil }
        guard let initializer = initializers[i] else {
            requests?.record(node.inputs[i])
            throw error("\(what) (input \(i), '\(node.inputs[i])') is computed by the graph; LayerKit needs it "
                        + "as an initializer (constant) here")
        }
        do {
            return try initializer.anyFloatTensor()
        } catch let failure as LayerKitError {
            throw error("\(what): \(failure)")
        }
    }

    /// Input `i` as integers (an int64 initializer such as Reshape's shape).
    func constantInts(_ i: Int, _ what: String) throws -> [Int] {
        guard has(i), let initializer = initializers[i] else {
            if has(i) { requests?.record(node.inputs[i]) }
            throw error("\(what) (input \(i)) must be an initializer: a shape computed at run time cannot be resolved")
        }
        do { return try initializer.int64s() } catch let failure as LayerKitError { throw error("\(what): \(failure)") }
    }

    /// Attribute `name` as an integer, `defaultValue` when absent.
    func int(_ name: String, default defaultValue: Int) throws -> Int { try node.int(name) ?? defaultValue }

    /// Attribute `name` as a float, `defaultValue` when absent.
    func float(_ name: String, default defaultValue: Float) throws -> Float { try node.float(name) ?? defaultValue }

    /// Attribute `name` as a list of integers, nil when absent.
    func ints(_ name: String) throws -> [Int]? { try node.ints(name) }

    /// The most a window attribute (kernel, stride, dilation, pad) may be:
    /// far past any real model, and small enough that the window arithmetic
    /// on it cannot overflow.
    static let maxWindowValue = 1 << 20

    /// A window attribute (`kernel_shape`, `strides`, `dilations`, `pads`),
    /// `defaultValue` when absent; each value must be in 0...2^20.
    func spatial(_ name: String, default defaultValue: [Int]) throws -> [Int] {
        let values = try node.ints(name) ?? defaultValue
        guard values.allSatisfy({ (0...ONNXNodeContext.maxWindowValue).contains($0) }) else {
            throw error("attribute '\(name)' \(values) must hold values from 0 to \(ONNXNodeContext.maxWindowValue)")
        }
        return values
    }

    /// The element count of `shape`; an overflowing or negative shape is this node's error.
    func elementCount(_ shape: [Int]) throws -> Int {
        do { return try Tensor.elementCount(of: shape) } catch let failure as LayerKitError { throw error("\(failure)") }
    }

    /// Attribute `name` as a string, `defaultValue` when absent.
    func string(_ name: String, default defaultValue: String) throws -> String { try node.string(name) ?? defaultValue }

    /// Throws unless every attribute is one of `known`.
    func requireAttributes(_ known: [String]) throws {
        for name in node.attributes.keys.sorted() where !known.contains(name) {
            throw error("attribute '\(name)' is not supported")
        }
    }

    /// An axis attribute made non-negative for a tensor of `rank`.
    func axis(_ value: Int, rank: Int) throws -> Int {
        let axis = value < 0 ? value + rank : value
        guard (0..<rank).contains(axis) else { throw error("axis \(value) is out of range for rank \(rank)") }
        return axis
    }

    /// Attributes as a Core ML-style parameter dictionary: numbers as
    /// `Double`/`Int`, strings, lists as arrays.
    func parameters() throws -> [String: Any] {
        var result: [String: Any] = [:]
        for (name, attribute) in node.attributes {
            switch attribute {
            case .float(let v): result[name] = Double(v)
            case .int(let v): result[name] = v
            case .string(let v): result[name] = v
            case .floats(let v): result[name] = v.map(Double.init)
            case .ints(let v): result[name] = v
            case .strings(let v): result[name] = v
            case .tensor: throw error("attribute '\(name)' is a tensor, which a custom layer's parameters cannot hold")
            case .graph, .graphs: throw error("attribute '\(name)' is a graph, which a custom layer's parameters cannot hold")
            case .type: throw error("attribute '\(name)' is a type, which a custom layer's parameters cannot hold")
            }
        }
        return result
    }
}

extension Tensor {
    /// The elements as Float32 little-endian bytes: a weight blob for `setWeightData`.
    var littleEndianData: Data {
        var data = Data(capacity: count * 4)
        for value in elements { withUnsafeBytes(of: value.bitPattern.littleEndian) { data.append(contentsOf: $0) } }
        return data
    }
}

/// The values nodes needed at prepare (weights, shapes, bounds) that the
/// graph computes from its inputs at run time, as one import found them.
/// `Model` makes the inputs they are computed from values of the plan
/// (constants of its import) and imports again: a model whose Conv weights or
/// Resize scales are inputs (or computed from them) runs, planned per value.
final class ValueRequests: @unchecked Sendable {
    private let lock = NSLock()
    private var names: [String] = []

    /// The values requested so far, in order.
    var values: [String] { lock.lock(); defer { lock.unlock() }; return names }

    func record(_ name: String) { lock.lock(); names.append(name); lock.unlock() }
}

/// The float layer a typed kernel builds from its node (the string-label
/// classifiers' and the float64 regressors' layers), kept by the node's
/// `TypedStep` so that a run does not rebuild it from the attributes.
final class LayerMemo: @unchecked Sendable {
    private let lock = NSLock()
    private var built: Layer?

    /// The layer `make` built on the first call.
    func layer(_ make: () throws -> Layer?) throws -> Layer? {
        lock.lock(); defer { lock.unlock() }
        if let built { return built }
        built = try make()
        return built
    }
}
