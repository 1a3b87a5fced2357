import Foundation
import LayerKitONNX

/// Cast and CastLike: `TypedTensor.converted(to:saturate:)`, ONNX Cast's
/// conversions between every type (float8 `saturate`, strings both ways).
extension TypedKernels {
    /// Cast to the `to` attribute's type.
    static func cast(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        guard let code = try node.node.int("to") else { throw node.error("attribute 'to' is required") }
        return [try cast(input(0, inputs, node), to: elementType(code, node), node)]
    }

    /// CastLike: Cast to the type of input 1, a constant's own, or the one
    /// `node.inputTypes` knows for a runtime value.
    static func castLike(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        guard let type = (inputs.count > 1 ? inputs[1]?.elementType : nil) ?? targetType(of: node) else {
            return nil
        }
        return [try cast(input(0, inputs, node), to: type, node)]
    }

    /// `x` as `type`, with the node's `saturate` (default 1; float8 targets only)
    /// and, to FLOAT8E8M0, its `round_mode` (Cast-24 on; default "up").
    static func cast(_ x: TypedTensor, to type: ElementType, _ node: ONNXNodeContext) throws -> TypedTensor {
        guard !type.isComplex, !x.elementType.isComplex else { throw node.error("Cast of \(x.elementType) to \(type) is not supported") }
        let saturate = try node.int("saturate", default: 1) != 0
        let roundMode = try node.string("round_mode", default: "up")
        guard ["up", "down", "nearest"].contains(roundMode) else {
            throw node.error("round_mode '\(roundMode)' is not one of up, down, nearest")
        }
        if type == .float8e8m0, x.elementType != type, x.elementType != .string {
            return try TypedTensor(elementType: type, shape: x.shape,
                                   bytes: x.doubles().map { e8m0(Float($0), roundMode: roundMode, saturate: saturate) })
        }
        return try x.converted(to: type, saturate: saturate)
    }

    /// The FLOAT8E8M0 code (a power of two, 2^(code - 127); 0xFF is NaN) of
    /// `value` as ONNX Cast-24 rounds it, on the float32's bits: "up" takes
    /// the next power of two for any fraction, "down" the exponent alone,
    /// "nearest" rounds on the mantissa's top bits (halves up). `saturate`
    /// keeps 2^127 from rounding past itself to NaN. NaN and infinities
    /// are NaN, as in the ONNX reference (the spec's table saturates an
    /// infinity); the sign is dropped (a negative value's is unspecified).
    static func e8m0(_ value: Float, roundMode: String, saturate: Bool) -> UInt8 {
        let bits = value.bitPattern
        var exponent = (bits >> 23) & 0xFF
        guard exponent != 0xFF else { return 0xFF }
        let roundUp: Bool
        switch roundMode {
        case "up": roundUp = bits & 0x7F_FFFF != 0
        case "nearest": roundUp = bits & 0x40_0000 != 0 && (bits & 0x3F_FFFF != 0 || exponent > 0)
        default: roundUp = false
        }
        if roundUp, !(saturate && exponent == 0xFE) { exponent += 1 }
        return UInt8(exponent)
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
