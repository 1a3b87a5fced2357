/// The versions of each op's definition LayerKit implements.
extension ONNXOperators {
    /// Op type -> the newest version of its definition (an opset at which it
    /// changed, `ONNXOpVersions.changes`) its converter, or for an op only
    /// load-time folding computes its `TypedKernels` kernel, implements,
    /// every older one included, reviewed against each change of onnx 1.23's schema
    /// history (the comment names what the versions after the first changed;
    /// "types" is a change of the element types alone, which LayerKit
    /// computes in Float32, or folds at load for integers and booleans).
    /// A model whose opset resolves an op past its entry, or to a version
    /// ONNX deprecated (`ONNXOpVersions.deprecated`), is refused at load
    /// naming both (`ONNXValidation`). After regenerating `ONNXOpVersions`
    /// from a newer onnx, OpTableTests names each op with a version past its
    /// entry: read what changed, implement it, and raise the entry.
    static let implementedVersions: [String: Int] = [
        "Abs": 13,  // 6: consumed_inputs dropped; 13: types
        "Add": 14,  // 7: numpy broadcasting (before, broadcast/axis); 13, 14: types
        "And": 7,  // 7: numpy broadcasting
        "ArgMax": 13,  // 11: negative axis; 12: select_last_index; 13: types (a folding kernel)
        "ArgMin": 13,  // 11: negative axis; 12: select_last_index; 13: types (a folding kernel)
        "AveragePool": 22,  // 7: count_include_pad; 10: ceil_mode; 19: dilations; 22: types (windows starting in the end padding dropped, as before)
        "BatchNormalization": 15,  // 6: consumed_inputs dropped; 7: is_test dropped; 9: spatial dropped; 14: training_mode; 15: types
        "BitShift": 28,  // 28: signed types, shifted right arithmetically (a folding kernel)
        "BitwiseAnd": 18,  // (a folding kernel)
        "BitwiseNot": 18,  // (a folding kernel)
        "BitwiseOr": 18,  // (a folding kernel)
        "BitwiseXor": 18,  // (a folding kernel)
        "Cast": 28,  // 6: `to` a type code (before, its name); 9 to 28: types (strings, float8, float6, 4- and 2-bit in the folding kernels); 19: saturate (float8); 24: round_mode (FLOAT8E8M0)
        "CastLike": 25,  // 19: saturate (float8); 24: round_mode (FLOAT8E8M0); others: types
        "Ceil": 13,  // 6: consumed_inputs dropped; 13: types
        "Celu": 28,  // 28: types
        "Clip": 13,  // 6: consumed_inputs dropped; 11: min and max as inputs; 12, 13: types (13: min > max gives max, as min(max(x, min), max))
        "Concat": 13,  // 4: axis required (before, default 1); 11: negative axis; 13: types
        "Constant": 25,  // 11: sparse_value (refused); 12: value_* attributes; others: types
        "ConstantOfShape": 25,  // 20 to 25: types
        "Conv": 22,  // 11: defaults spelled out; 22: types
        "ConvTranspose": 22,  // 11: SAME_UPPER/SAME_LOWER pad split corrected in the text; 22: types
        "Cos": 22,  // 22: types
        "CumSum": 14,  // 14: types (a folding kernel)
        "DepthToSpace": 28,  // 11: mode (DCR, CRD); 13: types; 28: a function body, same meaning
        "Div": 14,  // 7: numpy broadcasting; 13, 14: types
        "Dropout": 22,  // 6: consumed_inputs dropped; 7: is_test dropped; 10: types; 12: ratio and training_mode as inputs, seed; 13, 22: types
        "Elu": 22,  // 6: consumed_inputs dropped; 22: types
        "Equal": 19,  // 7: numpy broadcasting; 11, 13, 19: types (19: strings, folded)
        "Erf": 13,  // 13: types
        "Exp": 13,  // 6: consumed_inputs dropped; 13: types
        "Expand": 13,  // 13: types
        "Flatten": 25,  // 9 to 25: types (11: negative axis)
        "Floor": 13,  // 6: consumed_inputs dropped; 13: types
        "Gather": 13,  // 11: negative indices; 13: types
        "GatherElements": 13,  // 13: types
        "Gelu": 20,
        "Gemm": 13,  // 6: shape inference; 7: unidirectional broadcasting of C (before, broadcast); 9: types; 11: C optional; 13: types
        "GlobalAveragePool": 22,  // 22: types
        "GlobalLpPool": 22,  // 2: p an int (before, a float); 22: types
        "GlobalMaxPool": 22,  // 22: types
        "Greater": 13,  // 7: numpy broadcasting; 9, 13: types
        "GreaterOrEqual": 16,  // 16: types
        "HardSigmoid": 22,  // 6: consumed_inputs dropped; 22: types
        "HardSwish": 22,  // 22: types
        "Hardmax": 13,  // 13: along one axis, default -1 (before, the axes from axis on, flattened)
        "Identity": 25,  // 14, 16: sequences and optionals (refused); others: types
        "InstanceNormalization": 22,  // 6: consumed_inputs dropped; 22: types
        "IsInf": 20,  // 20: types
        "IsNaN": 20,  // 13, 20: types
        "LRN": 13,  // 13: types
        "LayerNormalization": 17,
        "LeakyRelu": 16,  // 6: consumed_inputs dropped; 16: types
        "Less": 13,  // 7: numpy broadcasting; 9, 13: types
        "LessOrEqual": 16,  // 16: types
        "Log": 13,  // 6: consumed_inputs dropped; 13: types
        "LogSoftmax": 13,  // 13: along one axis, default -1 (before, the axes from axis on, flattened)
        "LpPool": 22,  // 2: p an int (before, a float); 11: auto_pad text; 18: ceil_mode, dilations; 22: types
        "MatMul": 13,  // 9, 13: types
        "Max": 13,  // 6: consumed_inputs dropped; 8: numpy broadcasting; 12, 13: types
        "MaxPool": 22,  // 8: storage_order, Indices; 10: ceil_mode, dilations; 12: types; 22: types (windows starting in the end padding dropped, as before)
        "Mean": 13,  // 6: consumed_inputs dropped; 8: numpy broadcasting; 13: types
        "Min": 13,  // 6: consumed_inputs dropped; 8: numpy broadcasting; 12, 13: types
        "Mish": 22,  // 22: types
        "Mod": 28,  // 13: types; 28: fmod 0 defined on floats (floor quotient; ±0, ±inf and NaN cases)
        "Mul": 14,  // 7: numpy broadcasting; 13, 14: types
        "Neg": 13,  // 6: consumed_inputs dropped; 13: types
        "NonZero": 13,  // 13: types (a folding kernel)
        "Not": 1,
        "OneHot": 28,  // 11: negative indices and axis; 28: types (a folding kernel)
        "Or": 7,  // 7: numpy broadcasting
        "PRelu": 16,  // 6: consumed_inputs dropped; 7: unidirectional broadcasting of the slope; 9, 16: types
        "Pad": 25,  // 2: pads (before, paddings); 11: pads and constant_value as inputs; 18: axes input; 19: wrap mode; others: types
        "Pow": 15,  // 7: numpy broadcasting; 12, 13, 15: types
        "Range": 27,  // 27: stash_type (float16 and bfloat16 computed in float: LayerKit computes in Double, rounded to Float)
        "Reciprocal": 13,  // 6: consumed_inputs dropped; 13: types
        "ReduceL1": 18,  // 11: negative axes; 13: types; 18: axes as an input, noop_with_empty_axes
        "ReduceL2": 18,  // 11: negative axes; 13: types; 18: axes as an input, noop_with_empty_axes
        "ReduceLogSum": 28,  // 11: negative axes; 13: types; 18: axes as an input, noop_with_empty_axes; 28: types
        "ReduceLogSumExp": 28,  // 11: negative axes; 13: types; 18: axes as an input, noop_with_empty_axes; 28: types
        "ReduceMax": 20,  // 11: negative axes; 12, 13: types; 18: axes as an input, noop_with_empty_axes; 20: types
        "ReduceMean": 18,  // 11: negative axes; 13: types; 18: axes as an input, noop_with_empty_axes
        "ReduceMin": 20,  // 11: negative axes; 12, 13: types; 18: axes as an input, noop_with_empty_axes; 20: types
        "ReduceProd": 18,  // 11: negative axes; 13: types; 18: axes as an input, noop_with_empty_axes
        "ReduceSum": 13,  // 11: negative axes; 13: axes as an input, noop_with_empty_axes
        "ReduceSumSquare": 18,  // 11: negative axes; 13: types; 18: axes as an input, noop_with_empty_axes
        "Relu": 14,  // 6: consumed_inputs dropped; 13, 14: types
        "Reshape": 25,  // 5: shape as an input (before, an attribute); 14: allowzero; others: types
        "Resize": 19,  // 11: roi, sizes, coordinate modes, cubic; 13: roi and scales optional; 18: axes, keep_aspect_ratio_policy, antialias (1 refused); 19: half_pixel_symmetric
        "Round": 22,  // 22: types
        "Scatter": 9,  // 11: deprecated (ScatterElements)
        "ScatterElements": 18,  // 13: types; 16: reduction (add, mul refused); 18: reduction max, min (refused)
        "Selu": 22,  // 6: consumed_inputs dropped, alpha and gamma defaults to float precision; 22: types
        "Shape": 25,  // 15: start, end; others: types
        "Shrink": 9,
        "Sigmoid": 13,  // 6: consumed_inputs dropped; 13: types
        "Sign": 13,  // 13: types
        "Sin": 22,  // 22: types
        "Size": 25,  // 13 to 25: types
        "Slice": 13,  // 10: starts, ends, axes, steps as inputs; 11: negative axes; 13: types
        "Softmax": 13,  // 13: along one axis, default -1 (before, the axes from axis on, flattened)
        "Softplus": 22,  // 22: types
        "Softsign": 22,  // 22: types
        "SpaceToDepth": 28,  // 13: types; 28: mode (DCR, CRD)
        "Split": 18,  // 2: split as an attribute only; 11: negative axis; 13: split as an input; 18: num_outputs
        "Sqrt": 13,  // 6: consumed_inputs dropped; 13: types
        "Squeeze": 25,  // 11: negative axes; 13: axes as an input; others: types
        "Sub": 14,  // 7: numpy broadcasting; 13, 14: types
        "Sum": 13,  // 6: consumed_inputs dropped; 8: numpy broadcasting; 13: types
        "Tanh": 13,  // 6: consumed_inputs dropped; 13: types
        "ThresholdedRelu": 22,  // 22: types
        "Tile": 13,  // 6: repeats per axis (Tile-1's tiles and axis inputs refused); 13: types
        "Transpose": 25,  // 13 to 25: types
        "Unsqueeze": 25,  // 11: negative axes; 13: axes as an input; others: types
        "Upsample": 9,  // 7: scales attribute (before, height_scale and width_scale); 9: scales as an input; 10: deprecated (Resize)
        "Where": 16,  // 16: types
        "Xor": 7,  // 7: numpy broadcasting
    ]

    /// The op a model of a newer opset uses in place of one ONNX deprecated.
    static let replacements: [String: String] = ["Scatter": "ScatterElements", "Upsample": "Resize"]
}
