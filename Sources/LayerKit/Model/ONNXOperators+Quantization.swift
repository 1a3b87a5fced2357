/// ONNX's quantized ops, computed exactly on the CPU by their typed kernels
/// (`TypedKernels+Quantize`, `+IntegerProducts`, `+IntegerConvolution`):
/// on constants they fold at load (a QDQ model's int8 weights and int32
/// biases become float32 constants there); on an integer value of the run
/// a `TypedStep` runs the kernel, and on float data of the run (the
/// activations QuantizeLinear reads, the integers a float layer holds as
/// float32) its `TypedKernelLayer`. The one form with a GPU kernel is a QDQ
/// model's activation, quantized and dequantized per tensor: a formula
/// (`quantizationFormula`).
extension ONNXOperators {
    static let quantization: [ONNXOperator] = [
        // 13: axis (per-axis scales); 19: float8 types, saturate, float16 and bfloat16 x and scale; 21: block_size,
        // output_dtype, int16, uint16, int4, uint4; 23: precision, float4e2m1, the scale's own type; 24: float8e8m0
        // scales; 25: int2, uint2; 28: float6e2m3, float6e3m2
        ONNXOperator("QuantizeLinear", through: 28, inputs: 2...3, fold: TypedKernels.quantizeLinear) {
            try quantizationFormula($0, quantizing: true) ?? TypedKernelLayer.converter(TypedKernels.quantizeLinear)($0)
        },
        // 13: axis; 19: float8 types, float16 and bfloat16 scales; 21: block_size, int16, uint16, int4, uint4;
        // 23: output_dtype, float4e2m1; 24: float8e8m0 scales; 25: int2, uint2; 28: float6e2m3, float6e3m2
        ONNXOperator("DequantizeLinear", through: 28, inputs: 2...3, fold: TypedKernels.dequantizeLinear) {
            try quantizationFormula($0, quantizing: false) ?? TypedKernelLayer.converter(TypedKernels.dequantizeLinear)($0)
        },
        ONNXOperator("DynamicQuantizeLinear", through: 11, inputs: 1...1, outputs: 3...3, fold: TypedKernels.dynamicQuantizeLinear,
                     TypedKernelLayer.converter(TypedKernels.dynamicQuantizeLinear)),
        indexed("MatMulInteger", through: 10, inputs: 2...4, TypedKernels.matMulInteger),
        indexed("ConvInteger", through: 10, inputs: 2...4, TypedKernels.convInteger),
        // 21: float16 and bfloat16 scales, float8 types (refused: LayerKit computes int8 and uint8)
        indexed("QLinearMatMul", through: 21, inputs: 8...8, TypedKernels.qLinearMatMul),
        indexed("QLinearConv", through: 10, inputs: 8...9, TypedKernels.qLinearConv),
    ]

    /// The integer types whose every value fp16 storage holds exactly (at
    /// most 2048 in magnitude), which a quantization formula may make or read.
    static let halfExactQuantizedTypes: Set<ElementType> = [.int8, .uint8, .int4, .uint4, .int2, .uint2]

    /// A QuantizeLinear or DequantizeLinear of float32 data of the run by a
    /// constant float32 scale and zero point of one value each, as a
    /// per-element formula (`FormulaLayer`), which runs on the GPU too: a QDQ
    /// model's activations then stay on the device between its float layers.
    /// The formula computes in float32 what the typed kernel computes —
    /// `x / s` rounded half to even plus `z`, clamped (NaN to the minimum);
    /// `(x - z) * s` — and the integers it makes or reads are ones fp16
    /// storage holds exactly (`halfExactQuantizedTypes`). Nil for every other
    /// form, which the kernel's layer computes.
    static func quantizationFormula(_ node: ONNXNodeContext, quantizing: Bool) throws -> ConvertedNode? {
        guard node.initializers[0] == nil, let scale = node.initializers[1], scale.dataType == .float,
              try scale.elementCount() == 1 else { return nil }
        let zeroPoint = node.has(2) ? node.initializers[2] : nil
        if node.has(2) {
            guard let zeroPoint, try zeroPoint.elementCount() == 1 else { return nil }
        }
        let s = try node.constant(1, "the scale")[0], z = Float(try zeroPoint?.typed().double(at: 0) ?? 0)
        // The kernel's attribute and shape checks, on the shapes alone.
        _ = try TypedKernels.outputs(of: node, [try TypedTensor(zerosOf: .float32, shape: node.shape(0)),
                                                try scale.typed(), try zeroPoint?.typed()])
        if quantizing {
            let zeroType = zeroPoint.flatMap { ElementType(rawValue: $0.dataType.rawValue) }
            let type = try TypedKernels.quantizedType(node, zeroPoint: zeroType)
            let xType = node.inputTypes.first ?? nil
            guard xType == nil || xType == .float32, [0, 1].contains(try node.int("precision", default: 0)),
                  halfExactQuantizedTypes.contains(type), let range = TypedKernels.quantizedRange(type) else { return nil }
            let formula = "where(isnan(x), lo, clamp(round(x / s) + z, lo, hi))"
            let parameters = ["s": s, "z": z, "lo": Float(range.lowerBound), "hi": Float(range.upperBound)]
            return ConvertedNode(layer: try FormulaLayer(formula: formula, name: "QuantizeLinear", parameters: parameters),
                                 inputs: [0])
        }
        guard let type = node.inputTypes.first ?? nil, halfExactQuantizedTypes.contains(type),
              [0, 1].contains(try node.int("output_dtype", default: 0)) else { return nil }
        return ConvertedNode(layer: try FormulaLayer(formula: "(x - z) * s", name: "DequantizeLinear", parameters: ["s": s, "z": z]),
                             inputs: [0])
    }
}
