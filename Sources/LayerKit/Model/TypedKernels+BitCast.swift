import LayerKitONNX

/// BitCast: the input's bits read as another type of the same width.
extension TypedKernels {
    /// BitCast-26: each element's bits (little endian, as LayerKit stores
    /// them) as an element of `to`, which must be as wide (bool counts as
    /// 8 bits, as ONNX's reference); strings are refused.
    static func bitCast(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["to"])
        let x = try input(0, inputs, node)
        guard let code = try node.node.int("to") else { throw node.error("attribute 'to' is required") }
        guard let target = ElementType(rawValue: code), target != .string, x.elementType != .string else {
            throw node.error("casts the bits of non-string types; got \(x.elementType) to type code \(code)")
        }
        let bits = bitWidth(x.elementType)
        guard bits == bitWidth(target) else {
            throw node.error("\(x.elementType) (\(bits) bits) and \(target) (\(bitWidth(target)) bits) differ in width")
        }
        guard bits < 8 else { return [try TypedTensor(elementType: target, shape: x.shape, bytes: x.bytes)] }
        // Types under a byte take a byte each: their low bits, sign-extended for a signed target.
        let raw = x.bytes.map { $0 & UInt8((1 << bits) - 1) }
        guard target.isSigned else { return [try TypedTensor(elementType: target, shape: x.shape, bytes: raw)] }
        let values = raw.map { Int64($0) >= 1 << (bits - 1) ? Int64($0) - (1 << bits) : Int64($0) }
        return [try TypedTensor(target, shape: x.shape, integers: values)]
    }

    /// The bits of one element of `type` in ONNX's files.
    private static func bitWidth(_ type: ElementType) -> Int {
        switch type {
        case .int4, .uint4, .float4e2m1: 4
        case .int2, .uint2: 2
        case .float6e2m3, .float6e3m2: 6
        default: 8 * (type.byteWidth ?? 0)
        }
    }
}
