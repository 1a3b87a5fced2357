import Foundation
import LayerKitONNX

/// The typed CPU kernels of load-time folding: each op computed on
/// `TypedTensor`s in the element type ONNX gives it, as onnxruntime (or the
/// ONNX reference, for what onnxruntime lacks) computes it.
///
/// - Integers wrap to their type's width (int8 127 + 1 is -128), unsigned
///   types compare and divide as unsigned. int64 is the exception: it is
///   the type of shape arithmetic, where a wrapped value would silently
///   become a wrong shape, so an int64 overflow is an error naming the op
///   ("integer Add overflows Int64") instead.
/// - float32 computes in Float and float64 in Double; float16, bfloat16 and
///   the float8/6/4 types compute in Float and round back to their type,
///   as onnxruntime does.
/// - Integer division or Mod by zero is an error naming the node, never a trap.
///
/// Each family of kernels lives in a file of its own (`TypedKernels+<Family>`);
/// an op's declaration (`ONNXOperator.fold`, in its `ONNXOperators+<Family>`
/// file) names its kernel.
enum TypedKernels {
    /// A kernel: the node and its inputs (nil for an omitted optional one)
    /// to its outputs, or nil when the op does not fold on these types here
    /// (the importer then folds it with the node's own layer).
    typealias Kernel = @Sendable (ONNXNodeContext, [TypedTensor?]) throws -> [TypedTensor]?

    /// The outputs of `node` on its known `inputs`; nil when no kernel here
    /// folds it. Errors name the node.
    static func outputs(of node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        guard let kernel = ONNXOperators.declaration(of: node.node)?.fold else { return nil }
        do {
            guard let outputs = try kernel(node, inputs) else { return nil }
            for output in outputs { _ = try ONNXFolding.checkedCount(output.shape, node) }
            return outputs
        } catch {
            throw node.naming(error)
        }
    }

    // MARK: - Inputs

    /// Input `i`, which must be given.
    static func input(_ i: Int, _ inputs: [TypedTensor?], _ node: ONNXNodeContext) throws -> TypedTensor {
        guard i < inputs.count, let tensor = inputs[i] else { throw node.error("input \(i) is missing") }
        return tensor
    }

    /// Input `i` when given, nil when omitted.
    static func optional(_ i: Int, _ inputs: [TypedTensor?]) -> TypedTensor? { i < inputs.count ? inputs[i] : nil }

    /// The given inputs, in order, which must all share one element type.
    /// Floats of different types are brought to the first one's: LayerKit's
    /// float layers fold to float32, so a float16 value one of them folded
    /// may meet a float16 constant as float32.
    static func sameType(_ tensors: [TypedTensor], _ node: ONNXNodeContext) throws -> [TypedTensor] {
        guard let type = tensors.first?.elementType else { return tensors }
        return try tensors.map { tensor in
            if tensor.elementType == type { return tensor }
            guard tensor.elementType.isFloatingPoint, type.isFloatingPoint else {
                throw node.error("its inputs are \(tensors.map { "\($0.elementType)" }.joined(separator: " and ")); "
                                 + "the op takes one element type")
            }
            return try tensor.converted(to: type)
        }
    }

    /// A scalar (or one-element) input as an Int64.
    static func scalarInteger(_ tensor: TypedTensor, _ what: String, _ node: ONNXNodeContext) throws -> Int64 {
        guard tensor.count == 1 else { throw node.error("\(what) must be a scalar, got shape \(Tensor.describe(tensor.shape))") }
        guard tensor.elementType.isInteger else { throw node.error("\(what) must be an integer, got \(tensor.elementType)") }
        return tensor.integer(at: 0)
    }

    /// Whether int64 arithmetic on `type` is checked (see the type's doc):
    /// true for int64 only.
    static func isChecked(_ type: ElementType) -> Bool { type == .int64 }

    /// The error of an int64 op that overflows.
    static func overflow(_ op: String) -> LayerKitError { .invalidModel("integer \(op) overflows Int64") }
}

// MARK: - Lanes

/// The elements of a `TypedTensor` in the Swift type its ops compute in.
enum Lanes {
    /// The signed integer types, sign-extended.
    case signed([Int64])
    /// The unsigned integer types.
    case unsigned([UInt64])
    case bool([Bool])
    /// float32, and the narrower float types widened exactly (they compute in Float).
    case float([Float])
    case double([Double])
    case string([String])

    /// `tensor`'s elements.
    init(_ tensor: TypedTensor) {
        let type = tensor.elementType
        switch type {
        case .bool: self = .bool(tensor.integers().map { $0 != 0 })
        case .string: self = .string(tensor.strings)
        case .float64: self = .double(tensor.doubles())
        case .float32:
            self = .float(tensor.bytes.withUnsafeBytes { raw in
                (0..<tensor.count).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self))) }
            })
        default:
            if type.isSigned {
                self = .signed(tensor.integers())
            } else if type.isInteger {
                self = .unsigned(tensor.integers().map { UInt64(bitPattern: $0) })
            } else {
                self = .float(tensor.doubles().map { Float($0) })
            }
        }
    }

    /// These values as a tensor of `type` and `shape`: integers wrap to the
    /// type's width, Floats round to a narrower float type.
    func tensor(_ type: ElementType, shape: [Int]) throws -> TypedTensor {
        switch self {
        case .signed(let v): return try TypedTensor(type, shape: shape, integers: v)
        case .unsigned(let v): return try TypedTensor(type, shape: shape, unsignedIntegers: v)
        case .bool(let v): return try TypedTensor(type, shape: shape, integers: v.map { $0 ? 1 : 0 })
        case .double(let v): return try TypedTensor(type, shape: shape, doubles: v)
        case .string(let v): return try TypedTensor(shape: shape, strings: v)
        case .float(let v):
            guard type == .float32 else { return try TypedTensor(type, shape: shape, doubles: v.map(Double.init)) }
            var bytes = [UInt8](repeating: 0, count: 4 * v.count)
            bytes.withUnsafeMutableBytes { raw in
                for (i, value) in v.enumerated() { raw.storeBytes(of: value.bitPattern.littleEndian, toByteOffset: 4 * i, as: UInt32.self) }
            }
            return try TypedTensor(elementType: .float32, shape: shape, bytes: bytes)
        }
    }
}

// MARK: - Broadcasting

/// numpy's multidirectional broadcasting of some shapes: the output shape
/// and, per input, the offset of the element each output element reads.
struct Broadcast {
    let shape: [Int]
    let count: Int
    let offsets: [[Int]]

    /// Ranks aligned on the right; extents equal or 1.
    init(_ shapes: [[Int]], _ node: ONNXNodeContext) throws {
        let rank = shapes.map(\.count).max() ?? 0
        let padded = shapes.map { Array(repeating: 1, count: rank - $0.count) + $0 }
        var shape: [Int] = []
        for axis in 0..<rank {
            let extents = Set(padded.map { $0[axis] }).subtracting([1])
            guard extents.count <= 1 else {
                throw node.error("inputs \(shapes.map { Tensor.describe($0) }) do not broadcast")
            }
            shape.append(extents.first ?? 1)
        }
        let count = try ONNXFolding.checkedCount(shape, node)
        offsets = padded.map { s in
            // Same shape: the identity, the common case.
            if s == shape { return Array(0..<count) }
            var strides = Array(repeating: 0, count: rank), step = 1
            for axis in (0..<rank).reversed() {
                strides[axis] = s[axis] == 1 ? 0 : step
                step *= s[axis]
            }
            var offsets = [Int](repeating: 0, count: count)
            var index = Array(repeating: 0, count: rank), offset = 0
            for i in 0..<count {
                offsets[i] = offset
                // Step the multi-index, keeping the offset in step with it.
                var axis = rank - 1
                while axis >= 0 {
                    index[axis] += 1
                    offset += strides[axis]
                    if index[axis] < shape[axis] { break }
                    offset -= strides[axis] * index[axis]
                    index[axis] = 0
                    axis -= 1
                }
            }
            return offsets
        }
        (self.shape, self.count) = (shape, count)
    }

    /// `f` over two broadcast inputs' elements.
    func map<A, B, R>(_ a: [A], _ b: [B], _ f: (A, B) throws -> R) rethrows -> [R] {
        let (oa, ob) = (offsets[0], offsets[1])
        var out: [R] = []
        out.reserveCapacity(count)
        for i in 0..<count { out.append(try f(a[oa[i]], b[ob[i]])) }
        return out
    }

    /// `f` folded left over every input's element, for the variadic ops.
    func fold<T>(_ inputs: [[T]], _ f: (T, T) throws -> T) rethrows -> [T] {
        var out: [T] = []
        out.reserveCapacity(count)
        for i in 0..<count {
            var value = inputs[0][offsets[0][i]]
            for k in 1..<max(inputs.count, 1) { value = try f(value, inputs[k][offsets[k][i]]) }
            out.append(value)
        }
        return out
    }
}

// MARK: - Element movement

extension TypedTensor {
    /// The elements at `sources` (each: which of `tensors`, and an offset
    /// in it), as a tensor of `shape`: every tensor must have this one's
    /// element type. Moves bytes, so it is exact for every type.
    static func gathering(_ tensors: [TypedTensor], _ sources: [(Int, Int)], shape: [Int]) throws -> TypedTensor {
        let type = tensors[0].elementType
        guard let width = type.byteWidth else {
            return try TypedTensor(shape: shape, strings: sources.map { tensors[$0.0].strings[$0.1] })
        }
        var bytes = [UInt8](repeating: 0, count: sources.count * width)
        for (i, (k, offset)) in sources.enumerated() {
            for b in 0..<width { bytes[i * width + b] = tensors[k].bytes[offset * width + b] }
        }
        return try TypedTensor(elementType: type, shape: shape, bytes: bytes)
    }
}

extension ONNXTensor {
    /// The values as Floats, from any float type: FLOAT, FLOAT16 and DOUBLE
    /// as `floats()` reads them, bfloat16 and the float8/6/4 types (which
    /// folding makes, a Cast of weights to bfloat16) exactly through
    /// `TypedTensor`; and BOOL as 0 and 1 (a folded `Equal` is a Where's
    /// condition at run time). Integers are refused, as `floats()` does.
    func anyFloats() throws -> [Float] {
        if !dataType.isFloatingPoint, let type = ElementType(rawValue: dataType.rawValue), type.isFloatingPoint || type == .bool {
            return try typed().doubles().map { Float($0) }
        }
        return try floats()
    }

    /// `anyFloats()` as a tensor of the dims; FLOAT data straight into its storage (`floatTensor()`).
    func anyFloatTensor() throws -> Tensor {
        dataType == .float ? try floatTensor() : try Tensor(shape: dims, values: anyFloats())
    }
}
