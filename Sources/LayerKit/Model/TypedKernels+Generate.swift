import Foundation
import LayerKitONNX

/// Ops that make a tensor from a description: ConstantOfShape, Range,
/// NonZero and OneHot. Their counts come from values a file controls: a
/// count past the tensor limit is an error naming the node.
extension TypedKernels {
    /// ConstantOfShape: the `value` attribute's one element (float32 0 by
    /// default), of its own type, repeated over the shape input.
    static func constantOfShape(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let shape = try input(0, inputs, node).integers().map { Int($0) }
        let count = try ONNXFolding.checkedCount(shape, node)
        let value = try node.node.tensor("value")?.typed() ?? TypedTensor(.float32, shape: [1], doubles: [0])
        guard value.count == 1 else { throw node.error("value must hold one element") }
        guard let width = value.elementType.byteWidth else {
            return [try TypedTensor(shape: shape, strings: Array(repeating: value.strings[0], count: count))]
        }
        // The element's bytes, repeated (up to the tensor limit: no per-element bookkeeping).
        var bytes = [UInt8](repeating: 0, count: count * width)
        value.bytes.withUnsafeBytes { element in
            bytes.withUnsafeMutableBytes { raw in
                for i in 0..<count { (raw.baseAddress! + i * width).copyMemory(from: element.baseAddress!, byteCount: width) }
            }
        }
        return [try TypedTensor(elementType: value.elementType, shape: shape, bytes: bytes)]
    }

    /// Range of any numeric type: max(ceil((limit - start) / delta), 0)
    /// elements start + i * delta; exact for integers.
    static func range(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        guard inputs.count == 3 else { throw node.error("takes start, limit and delta") }
        let values = try sameType((0..<3).map { try input($0, inputs, node) }, node)
        for value in values where value.count != 1 {
            throw node.error("start, limit and delta must be scalars, got shape \(Tensor.describe(value.shape))")
        }
        let type = values[0].elementType
        switch Lanes(values[0]) {
        case .signed:
            let (start, limit, delta) = (values[0].integer(at: 0), values[1].integer(at: 0), values[2].integer(at: 0))
            let count = try rangeCount(start, limit, delta, node)
            // Every element lies between start and limit, so wrapping arithmetic gives it exactly.
            return [try TypedTensor(type, shape: [count], integers: (0..<count).map { start &+ Int64($0) &* delta })]
        case .float, .double:
            let (start, limit, delta) = (values[0].double(at: 0), values[1].double(at: 0), values[2].double(at: 0))
            let count = try rangeCount(start, limit, delta, node)
            return [try TypedTensor(type, shape: [count], doubles: (0..<count).map { start + Double($0) * delta })]
        default:
            throw node.error("Range of \(type) is not supported (ONNX's Range takes signed integers and floats)")
        }
    }

    /// ONNX Range's element count on integers, exactly (a span past Int64
    /// is past the tensor limit too); errors as the Double form's.
    private static func rangeCount(_ start: Int64, _ limit: Int64, _ delta: Int64, _ node: ONNXNodeContext) throws -> Int {
        guard delta != 0 else { throw node.error("delta is 0") }
        let (span, spanOverflow) = limit.subtractingReportingOverflow(start)
        var (steps, stepsOverflow) = span.dividedReportingOverflow(by: delta)
        guard !spanOverflow, !stepsOverflow else { throw node.error("would make more than \(ONNXFolding.maxElements) elements") }
        // Truncated division: one more step when a remainder is left in delta's direction.
        if span % delta != 0, (span < 0) == (delta < 0) { steps += 1 }
        guard steps > 0 else { return 0 }
        guard steps <= ONNXFolding.maxElements else { throw node.error("would make \(steps) elements") }
        return Int(steps)
    }

    /// ONNX Range's element count, max(ceil((limit - start) / delta), 0);
    /// a zero or NaN delta, a NaN bound or a count past the tensor limit is
    /// the node's error (checked in Double, before any conversion to Int).
    private static func rangeCount(_ start: Double, _ limit: Double, _ delta: Double, _ node: ONNXNodeContext) throws -> Int {
        guard delta != 0, !delta.isNaN else { throw node.error("delta is \(delta)") }
        let steps = ((limit - start) / delta).rounded(.up)
        guard !steps.isNaN else { throw node.error("start \(start), limit \(limit) and delta \(delta) give no count") }
        guard steps > 0 else { return 0 }
        guard steps <= Double(ONNXFolding.maxElements) else { throw node.error("would make \(steps) elements") }
        return Int(steps)
    }

    /// NonZero: the int64 indices [rank, n] of the non-zero elements (NaN
    /// counts), in row-major order; a scalar is read as one element.
    static func nonZero(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let x = try input(0, inputs, node)
        let shape = x.shape.isEmpty ? [1] : x.shape
        let nonZero = x.elementType == .string ? x.strings.map { !$0.isEmpty } : truth(x)
        var coordinates = Array(repeating: [Int64](), count: shape.count)
        var index = Array(repeating: 0, count: shape.count)
        for flag in nonZero {
            if flag { for axis in shape.indices { coordinates[axis].append(Int64(index[axis])) } }
            RowMajorIndex.step(&index, through: shape)
        }
        let n = coordinates.first?.count ?? 0
        return [try TypedTensor(.int64, shape: [shape.count, n], integers: coordinates.flatMap { $0 })]
    }

    /// OneHot: `values` [off, on] (their type is the output's) over a new
    /// axis of `depth`; negative indices count from the end, others past
    /// the depth are all off.
    static func oneHot(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let indices = try input(0, inputs, node)
        let depthTensor = try input(1, inputs, node)
        let values = try input(2, inputs, node)
        guard depthTensor.count == 1 else { throw node.error("depth must hold one value") }
        guard values.count == 2 else { throw node.error("values must hold [off, on], got \(values.count) elements") }
        let depthValue = depthTensor.double(at: 0).rounded(.towardZero)
        guard depthValue >= 1, depthValue <= Double(ONNXFolding.maxElements) else {
            throw node.error("depth \(depthValue) must be from 1 to \(ONNXFolding.maxElements)")
        }
        let depth = Int(depthValue)
        let rank = indices.shape.count + 1
        let axis = try node.axis(node.int("axis", default: -1), rank: rank)
        var shape = indices.shape
        shape.insert(depth, at: axis)
        let count = try ONNXFolding.checkedCount(shape, node)
        let outer = indices.shape[..<axis].reduce(1, *)
        let inner = indices.shape[axis...].reduce(1, *)
        let positions: [Int?] = indices.doubles().map { value in
            let index = value.rounded(.towardZero)
            let wrapped = index < 0 ? index + Double(depth) : index
            return wrapped >= 0 && wrapped < Double(depth) ? Int(wrapped) : nil
        }
        var sources = Array(repeating: (0, 0), count: count)
        for o in 0..<outer {
            for i in 0..<inner {
                if let hot = positions[o * inner + i] { sources[(o * depth + hot) * inner + i] = (0, 1) }
            }
        }
        return [try TypedTensor.gathering([values], sources, shape: shape)]
    }
}
