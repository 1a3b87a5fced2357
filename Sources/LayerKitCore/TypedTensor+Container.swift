/// ONNX's values that are not tensors: sequences of tensors, optionals (of
/// a tensor or a sequence) and, as ZipMap makes them, maps from class labels
/// to probabilities. LayerKit carries them as `TypedTensor`s whose
/// `container` holds the parts, so the typed runtime (folding, `TypedStep`s,
/// control-flow bodies) moves them as any other typed value. A container
/// holds no elements of its own: its shape is [0] (a zero-size value is a
/// constant of the plan, so a sequence input is read at prepare), and its
/// `elementType` is its tensors' type (the declared one when it is empty).
extension TypedTensor {
    /// What a container value holds.
    public indirect enum Container: Sendable, Hashable {
        /// ONNX `sequence(tensor)`: tensors of one element type, in order, any shapes.
        case sequence([TypedTensor])
        /// ONNX `optional(...)`: a tensor or a sequence, or nothing.
        case optional(TypedTensor?)
        /// ONNX `map(key, value)` as ZipMap makes it: keys (a 1-D string or
        /// int64 tensor) and their values (a 1-D tensor of as many).
        case map(keys: TypedTensor, values: TypedTensor)
    }

    /// A container value; `elementType` is its tensors' element type.
    public init(container: Container, elementType: ElementType) {
        (self.elementType, shape, count, bytes, strings) = (elementType, [0], 0, [], [])
        self.container = container
    }

    /// A sequence of `tensors`, which must all be tensors of `elementType`.
    public init(sequence tensors: [TypedTensor], elementType: ElementType) throws {
        for tensor in tensors where tensor.container != nil || tensor.elementType != elementType {
            throw LayerKitError.invalidParameter("a sequence of \(elementType) tensors cannot hold \(tensor.form)")
        }
        self.init(container: .sequence(tensors), elementType: elementType)
    }

    /// The tensors of a sequence; nil for any other value.
    public var sequenceElements: [TypedTensor]? {
        if case .sequence(let tensors) = container { return tensors }
        return nil
    }

    /// The value's form: its kind and element type, nested as ONNX's type is.
    public var form: ValueForm {
        switch container {
        case nil: return .tensor(elementType)
        case .sequence(let tensors)?: return .sequence(tensors.first?.form ?? .tensor(elementType))
        case .optional(let value)?: return .optional(value?.form ?? .tensor(elementType))
        case .map(let keys, let values)?: return .map(key: keys.elementType, value: .tensor(values.elementType))
        }
    }
}

/// The form of a model value, as ONNX's `TypeProto` gives it: a tensor of an
/// element type, or a sequence, optional or map around one.
public indirect enum ValueForm: Sendable, Hashable, CustomStringConvertible {
    /// A tensor of an element type (nil when the file does not give it).
    case tensor(ElementType?)
    case sequence(ValueForm)
    case optional(ValueForm)
    case map(key: ElementType, value: ValueForm)

    /// ONNX's spelling with LayerKit's type names: "sequence(tensor(float32))".
    public var description: String {
        switch self {
        case .tensor(let type): return "tensor(\(type?.description ?? "?"))"
        case .sequence(let inner): return "sequence(\(inner))"
        case .optional(let inner): return "optional(\(inner))"
        case .map(let key, let value): return "map(\(key), \(value))"
        }
    }

    /// Whether a value of form `given` may stand where this form is
    /// declared: the same kinds, and element types equal where both are
    /// known (an empty sequence's tensors have no shape to differ by).
    public func admits(_ given: ValueForm) -> Bool {
        switch (self, given) {
        case (.tensor(let a), .tensor(let b)): return a == nil || b == nil || a == b
        case (.sequence(let a), .sequence(let b)), (.optional(let a), .optional(let b)): return a.admits(b)
        // An optional is given as its value, or as an empty optional of whatever form.
        case (.optional(let a), _): return a.admits(given)
        case (.map(let k1, let v1), .map(let k2, let v2)): return k1 == k2 && v1.admits(v2)
        default: return false
        }
    }
}

extension ValueForm {
    /// The element type of the tensors inside, when the form gives it.
    public var elementType: ElementType? {
        switch self {
        case .tensor(let type): return type
        case .sequence(let inner), .optional(let inner), .map(_, let inner): return inner.elementType
        }
    }
}
