/// LayerKit's side of an op's element types (ONNX's side is the op's schema,
/// `ONNXOpSchema`): which types it computes, and how. Derived from the
/// declaration (a conversion computes floats in its layer, a typed kernel
/// every type), with what a declaration adds (`moved`, `shape`).
struct OpTypes: OptionSet, Sendable {
    let rawValue: Int

    /// Float types (float32, float16, bfloat16, float64, float8/6/4)
    /// computed in float32 by the op's layer: the CPU evaluator, and the GPU
    /// kernel beside it. Every op with a conversion.
    static let floatLayer = OpTypes(rawValue: 1)
    /// Every type (integers, bool and strings included) computed exactly in
    /// its own type by the op's typed kernel (`TypedKernels`): at prepare
    /// where its inputs are known, else at run time in a `TypedStep`. Every
    /// op with a folding kernel.
    static let typedKernel = OpTypes(rawValue: 2)
    /// Every type moved exactly, element by element, by an element-moving
    /// layer (integers, bool and strings on their bits): reshapes, gathers,
    /// concatenations, slices. Declared.
    static let moved = OpTypes(rawValue: 4)
    /// Reads only its input's shape (Shape, Size): every type. Declared.
    static let shape = OpTypes(rawValue: 8)
    /// A bool input read as a mask by a float layer where the schema also
    /// allows floats (Attention's `attn_mask`: true attends, false masks),
    /// its values known at prepare. Declared.
    static let boolMask = OpTypes(rawValue: 16)

    /// Whether LayerKit computes the op on values of `type` (complex values
    /// by none of its ways).
    func computes(_ type: ElementType) -> Bool {
        guard !type.isComplex else { return false }
        return !isDisjoint(with: [.typedKernel, .moved, .shape]) || (contains(.floatLayer) && type.isFloatingPoint)
            || (contains(.boolMask) && type == .bool)
    }

    /// How LayerKit computes the op, for `layerkit ops` and error messages.
    var summary: String {
        var ways: [String] = []
        if contains(.floatLayer) { ways.append("float types in float32 by its layer (CPU and GPU)") }
        if contains(.moved) { ways.append("every type moved exactly") }
        if contains(.shape) { ways.append("every type (it reads the shape alone)") }
        if contains(.boolMask) { ways.append("bool masks (known at prepare)") }
        if contains(.typedKernel) {
            ways.append((contains(.floatLayer) ? "every other type" : "every type") + " exactly by its typed kernel (CPU)")
        }
        return ways.joined(separator: "; ")
    }
}
