import LayerKitONNX

extension Model {
    /// The element type of a model input or output: ONNX's
    /// `TensorProto.DataType`, with ONNX's code as the raw value
    /// (`init?(rawValue:)` is nil for 0, UNDEFINED, and for codes newer
    /// than this list).
    public enum ElementType: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        case float32 = 1, uint8, int8, uint16, int16, int32, int64, string, bool, float16, float64
        case uint32, uint64, complex64, complex128, bfloat16
        case float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz
        case uint4, int4, float4e2m1, float8e8m0, uint2, int2, float6e2m3, float6e3m2

        /// Whether values of this type are integers or booleans (not floating point).
        public var isInteger: Bool {
            [.uint8, .int8, .uint16, .int16, .int32, .int64, .bool, .uint32, .uint64, .uint4, .int4, .uint2, .int2]
                .contains(self)
        }

        /// The Swift-style name: "float32", "float16", "int64", ...
        public var description: String { Self.names[rawValue - 1] }

        /// ONNX's own name: "FLOAT", "FLOAT16", "INT64", ... (as
        /// `ONNXDataType` names it).
        public var onnxName: String { ONNXDataType(rawValue: rawValue).description }

        /// The case names, in code order (code 1 first).
        private static let names = [
            "float32", "uint8", "int8", "uint16", "int16", "int32", "int64", "string", "bool", "float16", "float64",
            "uint32", "uint64", "complex64", "complex128", "bfloat16",
            "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
            "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2", "float6e2m3", "float6e3m2",
        ]
    }
}
