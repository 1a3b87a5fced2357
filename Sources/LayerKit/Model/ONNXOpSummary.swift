/// One standard ONNX op LayerKit runs or folds, as its declaration
/// (`ONNXOperator`) says: what `layerkit ops --onnx` and Docs/OPS.md list.
public struct ONNXOpSummary: Sendable {
    /// The op type.
    public let name: String
    /// The newest version of its definition LayerKit implements, every
    /// older one included.
    public let implemented: Int
    /// The element types LayerKit computes it in, and how ("float types in
    /// float32 by its layer (CPU and GPU); every other type exactly by its
    /// typed kernel (CPU)").
    public let types: String

    /// Every standard ONNX op LayerKit declares, by name.
    public static var all: [ONNXOpSummary] {
        ONNXOperators.families.joined().compactMap { op in
            op.implemented.map { ONNXOpSummary(name: op.name, implemented: $0, types: op.types.summary) }
        }.sorted { $0.name < $1.name }
    }
}
