import Foundation
import LayerKitONNX

/// Cast and CastLike: `TypedTensor.converted(to:saturate:)`, ONNX Cast's
/// conversions between every type (float8 `saturate`, strings both ways).
extension TypedKernels {
    static let casts: [String: Kernel] = [
        "Cast": { node, inputs in
            guard let code = try node.node.int("to") else { throw node.error("attribute 'to' is required") }
            return [try cast(input(0, inputs, node), to: elementType(code, node), node)]
        },
        "CastLike": { node, inputs in
            // The target's type: a constant's own, or the one `node.inputTypes` knows for a runtime value.
            guard let type = (inputs.count > 1 ? inputs[1]?.elementType : nil) ?? targetType(of: node) else {
                return nil
            }
            return [try cast(input(0, inputs, node), to: type, node)]
        },
    ]

    /// `x` as `type`, with the node's `saturate` (default 1; float8 targets only).
    static func cast(_ x: TypedTensor, to type: ElementType, _ node: ONNXNodeContext) throws -> TypedTensor {
        guard !type.isComplex, !x.elementType.isComplex else { throw node.error("Cast of \(x.elementType) to \(type) is not supported") }
        return try x.converted(to: type, saturate: node.int("saturate", default: 1) != 0)
    }

    /// The element type of ONNX code `code` (Cast's `to`).
    static func elementType(_ code: Int, _ node: ONNXNodeContext) throws -> ElementType {
        guard let type = ElementType(rawValue: code) else { throw node.error("attribute 'to' is \(code), not an ONNX element type") }
        return type
    }

    /// CastLike's target type when its target (input 1) is not a constant:
    /// the declared type the importer found for it (a graph input's, an
    /// initializer's), nil when there is no target.
    static func targetType(of node: ONNXNodeContext) -> ElementType? {
        node.inputTypes.count > 1 ? node.inputTypes[1] : nil
    }
}
