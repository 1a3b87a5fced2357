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
/// Float work is folded by the node's own layer on the CPU. Integer and
/// boolean values (shapes, indices, masks) have no layer: element-moving
/// ops run their layer's generic `moveElements` on Int64, and the integer
/// arithmetic of shape computations is done here, on Int64 (booleans 0/1).
enum ONNXFolding {
    /// The most elements a folded value may have: the model limit for one tensor.
    static let maxElements = ONNXImporter.maxValueElements

    /// The outputs of `node` when they are known at load without running a
    /// layer: `Constant`, `Shape` and `Size` (from the input shape alone),
    /// and integer arithmetic on constant integer inputs. Nil when the node
    /// is not folded here.
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
        let given = node.node.inputs.indices.filter { node.has($0) }
        guard !given.isEmpty, given.allSatisfy({ constants[$0] != nil }) else { return nil }
        let integerInput = given.contains { constants[$0].map(isInteger) ?? false }
        switch op {
        case "ConstantOfShape": return [try constantOfShape(node, constants)]
        case "Range": return [try range(node, constants)]
        case "Cast":
            if try integerInput || isIntegerType(node.int("to", default: 1)) {
                return [try cast(node, required(0, of: constants, node))]
            }
        default: break
        }
        guard integerInput, let arithmetic = IntegerArithmetic(op) else { return nil }
        return try arithmetic.apply(node, given.map { try IntArray(required($0, of: constants, node), node) })
    }

    /// Constant input `i`; an omitted one (an empty name) is the node's error.
    private static func required(_ i: Int, of constants: [ONNXTensor?], _ node: ONNXNodeContext) throws -> ONNXTensor {
        guard i < constants.count, let tensor = constants[i] else { throw node.error("input \(i) is missing") }
        return tensor
    }

    /// Whether the tensor holds integers or booleans (not floats).
    static func isInteger(_ tensor: ONNXTensor) -> Bool { !tensor.dataType.isFloatingPoint }

    private static func isIntegerType(_ code: Int) -> Bool { !ONNXDataType(rawValue: code).isFloatingPoint }

    /// A `Constant` node's tensor, from whichever value attribute it has.
    private static func constant(_ node: ONNXNodeContext) throws -> ONNXTensor {
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

    private static func constantOfShape(_ node: ONNXNodeContext, _ constants: [ONNXTensor?]) throws -> ONNXTensor {
        let shape = try IntArray(required(0, of: constants, node), node).values.map { Int($0) }
        let count = try checkedCount(shape, node)
        guard let value = try node.node.tensor("value") else {
            return ONNXTensor(name: "", dims: shape, floats: Array(repeating: 0, count: count))
        }
        guard (try? value.elementCount()) == 1 else { throw node.error("value must hold one element") }
        if isInteger(value) {
            return ONNXTensor(name: "", dims: shape, int64s: Array(repeating: Int64(try value.int64s()[0]), count: count))
        }
        return ONNXTensor(name: "", dims: shape, floats: Array(repeating: try value.floats()[0], count: count))
    }

    private static func range(_ node: ONNXNodeContext, _ constants: [ONNXTensor?]) throws -> ONNXTensor {
        guard constants.count == 3 else { throw node.error("takes start, limit and delta") }
        let inputs = try (0..<3).map { try required($0, of: constants, node) }
        if inputs.allSatisfy(isInteger) {
            let (start, limit, delta) = try (scalar(inputs[0], node), scalar(inputs[1], node), scalar(inputs[2], node))
            let count = try rangeCount(start, limit, delta, node)
            // Every element lies between start and limit, so wrapping arithmetic gives it exactly.
            return ONNXTensor(name: "", dims: [count], int64s: (0..<count).map { start &+ Int64($0) &* delta })
        }
        let values = try inputs.map { tensor -> Double in
            let floats = try tensor.floats()
            guard floats.count == 1 else { throw node.error("start, limit and delta must be scalars") }
            return Double(floats[0])
        }
        let count = try rangeCount(values[0], values[1], values[2], node)
        return ONNXTensor(name: "", dims: [count], floats: (0..<count).map { Float(values[0] + Double($0) * values[2]) })
    }

    /// ONNX Range's element count on integers, exactly (a span past Int64
    /// is past the tensor limit too); errors as the Double form's.
    private static func rangeCount(_ start: Int64, _ limit: Int64, _ delta: Int64, _ node: ONNXNodeContext) throws -> Int {
        guard delta != 0 else { throw node.error("delta is 0") }
        let (span, spanOverflow) = limit.subtractingReportingOverflow(start)
        var (steps, stepsOverflow) = span.dividedReportingOverflow(by: delta)
        guard !spanOverflow, !stepsOverflow else { throw node.error("would make more than \(maxElements) elements") }
        // Truncated division: one more step when a remainder is left in delta's direction.
        if span % delta != 0, (span < 0) == (delta < 0) { steps += 1 }
        guard steps > 0 else { return 0 }
        guard steps <= maxElements else { throw node.error("would make \(steps) elements") }
        return Int(steps)
    }

    /// ONNX Range's element count, max(ceil((limit - start) / delta), 0);
    /// a zero or NaN delta, a NaN bound or a count past the tensor limit is
    /// the node's error (checked in Double, before any conversion to Int).
    private static func rangeCount(_ start: Double, _ limit: Double, _ delta: Double,
                                   _ node: ONNXNodeContext) throws -> Int {
        guard delta != 0, !delta.isNaN else { throw node.error("delta is \(delta)") }
        let steps = ((limit - start) / delta).rounded(.up)
        guard !steps.isNaN else { throw node.error("start \(start), limit \(limit) and delta \(delta) give no count") }
        guard steps > 0 else { return 0 }
        guard steps <= Double(maxElements) else { throw node.error("would make \(steps) elements") }
        return Int(steps)
    }

    private static func scalar(_ tensor: ONNXTensor, _ node: ONNXNodeContext) throws -> Int64 {
        let values = try IntArray(tensor, node).values
        guard values.count == 1 else { throw node.error("expects a scalar, got dims \(tensor.dims)") }
        return values[0]
    }

    /// Cast on constants: to an integer type truncates toward zero (NaN and
    /// out-of-range floats are an error: their result is undefined in ONNX);
    /// to BOOL is `!= 0`; to a float type converts.
    private static func cast(_ node: ONNXNodeContext, _ input: ONNXTensor) throws -> ONNXTensor {
        let to = try node.int("to", default: 1)
        if !isIntegerType(to) {
            let values = isInteger(input) ? try input.int64s().map { Float($0) } : try input.floats()
            return ONNXTensor(name: "", dims: input.dims, floats: values)
        }
        var values: [Int64]
        if isInteger(input) {
            values = try input.int64s().map { Int64($0) }
        } else {
            values = try input.floats().map { value in
                guard let integer = Int64(exactly: value.rounded(.towardZero)) else {
                    throw node.error("cannot cast \(value) to an integer")
                }
                return integer
            }
        }
        // Booleans stay INT64 0/1 in folded values.
        if to == ONNXDataType.bool.rawValue { values = values.map { $0 != 0 ? 1 : 0 } }
        return ONNXTensor(name: "", dims: input.dims, int64s: values)
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

/// Integer values of a folded tensor, row-major; booleans are 0 and 1.
struct IntArray {
    var shape: [Int]
    var values: [Int64]

    init(shape: [Int], values: [Int64]) {
        self.shape = shape
        self.values = values
    }

    init(_ tensor: ONNXTensor, _ node: ONNXNodeContext) throws {
        do {
            shape = tensor.dims
            if ONNXFolding.isInteger(tensor) {
                values = try tensor.int64s().map { Int64($0) }
            } else {
                // A float operand of integer arithmetic (rare: Mul by a float
                // scale) must be a whole number to stay exact.
                values = try tensor.floats().map { value in
                    guard let integer = Int64(exactly: value) else {
                        throw node.error("mixes integer values with the non-integer \(value)")
                    }
                    return integer
                }
            }
        } catch let failure as LayerKitError {
            throw node.naming(failure)
        }
    }

    var tensor: ONNXTensor { ONNXTensor(name: "", dims: shape, int64s: values) }
}
