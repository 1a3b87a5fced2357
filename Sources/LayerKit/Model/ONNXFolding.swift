import LayerKitONNX
import Foundation

/// Load-time simplification, per set of input shapes, before placement (as
/// onnxruntime's constant folding and ncnn's pnnx passes do): a node whose
/// every input is known at load is computed once and its outputs become
/// constants. Exported models compute their reshape targets from `Shape`
/// (`Shape → Gather → Unsqueeze → Concat → Reshape`), pass shared biases
/// through `Identity` and emit `Constant` nodes; after folding, the layers
/// see plain initializers.
///
/// Values keep their ONNX element type while they fold: arithmetic,
/// comparisons, logic, casts, reductions and generators run on
/// `TypedTensor`s in that type (`TypedKernels`, exactly as onnxruntime);
/// element-moving ops run their layer's generic `moveElements` on the
/// elements' bits; other float work is folded by the node's own layer on
/// the CPU, in float32.
enum ONNXFolding {
    /// The most elements a folded value may have: the model limit for one tensor.
    static let maxElements = ONNXImporter.maxValueElements

    /// The outputs of `node` when they are known at load without running a
    /// layer: `Constant`, `Shape` and `Size` (from the input shape alone),
    /// and the ops of `TypedKernels` on constant inputs (CastLike needs only
    /// its input constant: of its target, the type is enough). Nil when the
    /// node is not folded here.
    static func outputs(of node: ONNXNodeContext, constants: [ONNXTensor?]) throws -> [ONNXTensor]? {
        let op = node.node.opType
        switch op {
        case "Constant": return [try constant(node)]
        case "Shape":
            let shape = try node.shape(0)
            let rank = shape.count
            // Opset 15's start/end slice the shape, clamped like Slice.
            func clamp(_ v: Int) -> Int { min(max(v < 0 ? v + rank : v, 0), rank) }
            let start = clamp(try node.int("start", default: 0))
            let end = max(start, clamp(try node.int("end", default: rank)))
            return [ONNXTensor(name: "", dims: [end - start], int64s: shape[start..<end].map { Int64($0) })]
        case "Size": return [ONNXTensor(name: "", dims: [], int64s: [Int64(try node.elementCount(node.shape(0)))])]
        default: break
        }
        var given = node.node.inputs.indices.filter { node.has($0) }
        if op == "CastLike", given.contains(1), constants[1] == nil, given.contains(0), constants[0] != nil {
            // A runtime target: its declared type is all CastLike takes from it.
            guard TypedKernels.targetType(of: node) != nil else {
                throw node.error("target_type (input 1, '\(node.node.inputs[1])') is computed at run time and its "
                                 + "element type is unknown: LayerKit knows the types of constants and graph inputs")
            }
            given = [0]
        }
        // An op only folding computes may take no input at all (SequenceEmpty, an empty Optional).
        let foldsAlone = given.isEmpty && ONNXOperators.declaration(of: node.node).map { $0.convert == nil && $0.fold != nil } == true
        guard !given.isEmpty || foldsAlone, given.allSatisfy({ constants[$0] != nil }) else { return nil }
        let inputs: [TypedTensor?]
        do {
            inputs = try constants.indices.map { given.contains($0) ? try constants[$0]?.typed() : nil }
        } catch {
            throw node.naming(error)
        }
        return try TypedKernels.outputs(of: node, inputs)?.map { ONNXTensor(name: "", typed: $0) }
    }

    /// A `Constant` node's tensor, from whichever value attribute it has.
    static func constant(_ node: ONNXNodeContext) throws -> ONNXTensor {
        let attributes = node.node.attributes
        guard attributes.count == 1, let (name, value) = attributes.first else {
            throw node.error("a Constant takes exactly one value attribute, got \(attributes.keys.sorted())")
        }
        switch (name, value) {
        case ("value", .tensor(let tensor)): return tensor
        case ("value_float", .float(let v)): return ONNXTensor(name: "", dims: [], floats: [v])
        case ("value_floats", .floats(let v)): return ONNXTensor(name: "", dims: [v.count], floats: v)
        case ("value_int", .int(let v)): return ONNXTensor(name: "", dims: [], int64s: [Int64(v)])
        case ("value_ints", .ints(let v)): return ONNXTensor(name: "", dims: [v.count], int64s: v.map { Int64($0) })
        default: throw node.error("a Constant with attribute '\(name)' (\(value.kind)) is not supported")
        }
    }

    static func checkedCount(_ shape: [Int], _ node: ONNXNodeContext) throws -> Int {
        guard shape.allSatisfy({ $0 >= 0 }) else { throw node.error("shape \(shape) has a negative extent") }
        let count = try node.elementCount(shape)
        guard count <= maxElements else {
            throw node.error("shape \(shape) would hold more than \(maxElements >> 20)M elements (1 GiB), "
                             + "LayerKit's limit for one tensor")
        }
        return count
    }
}
