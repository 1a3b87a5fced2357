/// ONNX's quantized ops, computed exactly on the CPU by their typed kernels
/// (`TypedKernels+Quantize`, `+IntegerProducts`, `+IntegerConvolution`):
/// on constants they fold at load (a QDQ model's int8 weights and int32
/// biases become float32 constants there); on an integer value of the run
/// a `TypedStep` runs the kernel, and on float data of the run (the
/// activations QuantizeLinear reads, the integers a float layer holds as
/// float32) its `TypedKernelLayer`. None has a GPU form: the integers stay
/// exact on the host.
extension ONNXOperators {
    static let quantization: [ONNXOperator] = [
        // 13: axis (per-axis scales); 19: float8 types, saturate, float16 and bfloat16 x and scale; 21: block_size,
        // output_dtype, int16, uint16, int4, uint4; 23: precision, float4e2m1, the scale's own type; 24: float8e8m0
        // scales; 25: int2, uint2; 28: float6e2m3, float6e3m2
        indexed("QuantizeLinear", through: 28, inputs: 2...3, TypedKernels.quantizeLinear),
        // 13: axis; 19: float8 types, float16 and bfloat16 scales; 21: block_size, int16, uint16, int4, uint4;
        // 23: output_dtype, float4e2m1; 24: float8e8m0 scales; 25: int2, uint2; 28: float6e2m3, float6e3m2
        indexed("DequantizeLinear", through: 28, inputs: 2...3, TypedKernels.dequantizeLinear),
        ONNXOperator("DynamicQuantizeLinear", through: 11, inputs: 1...1, outputs: 3...3, fold: TypedKernels.dynamicQuantizeLinear,
                     TypedKernelLayer.converter(TypedKernels.dynamicQuantizeLinear)),
        indexed("MatMulInteger", through: 10, inputs: 2...4, TypedKernels.matMulInteger),
        indexed("ConvInteger", through: 10, inputs: 2...4, TypedKernels.convInteger),
        // 21: float16 and bfloat16 scales, float8 types (refused: LayerKit computes int8 and uint8)
        indexed("QLinearMatMul", through: 21, inputs: 8...8, TypedKernels.qLinearMatMul),
        indexed("QLinearConv", through: 10, inputs: 8...9, TypedKernels.qLinearConv),
    ]
}
