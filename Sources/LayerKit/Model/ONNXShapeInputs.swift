/// ONNX's facts, from the operator spec: the inputs whose *values* decide
/// an op's output shape (a Reshape's target, a Range's limits, the data of
/// a NonZero). A node reading such an input from a value computed at run
/// time cannot be planned once for every value: the importer asks for that
/// value at prepare (`ValueRequests`) and the plan is made per value. Other
/// inputs' values never change a shape, so nodes reading them at run time
/// are planned once (`TypedStep`); a shape that changes all the same is
/// caught by the run (`TypedStep.ShapeChanged`) and planned per value then.
enum ONNXShapeInputs {
    /// Per op type, the input positions whose values decide its output shape.
    static let byOp: [String: Set<Int>] = [
        "Reshape": [1], "Expand": [1], "Tile": [1], "Slice": [1, 2, 3, 4], "Pad": [1, 3], "ConstantOfShape": [0],
        "Range": [0, 1, 2], "OneHot": [1], "TopK": [1], "Resize": [1, 2, 3], "Upsample": [1], "Squeeze": [1],
        "Unsqueeze": [1], "Split": [1], "NonZero": [0], "Compress": [1], "Unique": [0], "CenterCropPad": [1], "AffineGrid": [1],
        "Col2Im": [1, 2], "MaxUnpool": [2], "DFT": [1, 2], "STFT": [1, 3], "BlackmanWindow": [0], "HannWindow": [0],
        "HammingWindow": [0], "MelWeightMatrix": [0, 1], "ReduceSum": [1], "ReduceMean": [1], "ReduceMax": [1],
        "ReduceMin": [1], "ReduceProd": [1], "ReduceL1": [1], "ReduceL2": [1], "ReduceLogSum": [1],
        "ReduceLogSumExp": [1], "ReduceSumSquare": [1], "If": [0], "Loop": [0, 1],
    ]

    /// Whether input `i` of an `op` node decides its output shape by its values.
    static func decidesShape(_ op: String, input i: Int) -> Bool { byOp[op]?.contains(i) ?? false }
}
