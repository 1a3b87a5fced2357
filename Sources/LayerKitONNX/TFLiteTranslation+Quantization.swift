import LayerKitCore
// Fully quantized (int8/uint8 activation) models, emulated in float32: each
// quantized activation is held as the real value it represents, and every op
// TFLite computes in integers is followed by a requantization of its float
// result to the output tensor's grid, written with standard ops (Div, Clip,
// Mul, and Abs, Floor, Sign to round). ONNX's Round rounds half to even where
// TFLite rounds half away from zero (ties are common: an average of 4), so
// rounding is written as sign(x) · floor(|x| + 0.5); TFLite's integer kernels
// rescale with fixed-point multipliers, so a result may still differ from
// LiteRT's by one quantum, and a later op may carry that difference further.

/// The grid of a quantized activation: real = scale · (q − zeroPoint), q in `range`.
struct TFLiteGrid {
    let scale: Float
    let zeroPoint: Int
    let range: ClosedRange<Int>
}

extension TFLiteGraphBuilder {
    /// The operators LayerKit runs on int8 or uint8 activations.
    static let quantizedOperators: Set<String> = [
        "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D", "DEQUANTIZE", "FULLY_CONNECTED",
        "LOGISTIC", "MAX_POOL_2D", "MEAN", "MUL", "PAD", "QUANTIZE", "RELU", "RELU6", "RESHAPE", "SOFTMAX",
    ]

    /// The grid of activation `index`: nil for a float32 tensor; an int8 or
    /// uint8 tensor's per-tensor scale and zero point; any other type, or
    /// quantization LayerKit cannot emulate, refused.
    func grid(_ index: Int) throws -> TFLiteGrid? {
        let tensor = tensors[index]
        if tensor.type == 0 { return nil }
        guard tensor.type == 3 || tensor.type == 9 else {
            throw LayerKitError.invalidModel("tensor '\(tensor.name)' is \(tensor.typeName): LayerKit runs float32 "
                                             + "TensorFlow Lite graphs and int8 or uint8 quantized ones")
        }
        guard let quantization = tensor.quantization, quantization.scale.count == 1, quantization.zeroPoint.count <= 1,
              let scale = quantization.scale.first, scale > 0, scale.isFinite else {
            throw LayerKitError.invalidModel("activation '\(tensor.name)' is \(tensor.typeName) without one positive "
                                             + "scale and zero point (per-tensor quantization)")
        }
        let range = tensor.type == 3 ? 0...255 : -128...127
        let zeroPoint = quantization.zeroPoint.first ?? 0
        guard range.contains(zeroPoint) else {
            throw LayerKitError.invalidModel("activation '\(tensor.name)' has zero point \(zeroPoint) outside "
                                             + "\(tensor.typeName)'s range")
        }
        return TFLiteGrid(scale: scale, zeroPoint: zeroPoint, range: range)
    }

    /// Rounds the value of quantized tensor `index` to its grid, as TFLite's
    /// integer op writing it does: (clamp(round(x / s), qmin − z, qmax − z)) · s,
    /// which is (q − z) · s for q = clamp(round(x / s) + z, qmin, qmax).
    mutating func requantize(_ index: Int, _ grid: TFLiteGrid) throws {
        let input = try value(index), name = unique(tensors[index].name + ".requantized")
        let steps = unique(name + ".steps"), rounded = unique(name + ".rounded"), clipped = unique(name + ".clipped")
        let scale = constant(name + ".scale", [], [grid.scale])
        addNode("Div", [input, scale], steps)
        roundHalfAwayFromZero(steps, into: rounded)
        addNode("Clip", [rounded, constant(name + ".min", [], [Float(grid.range.lowerBound - grid.zeroPoint)]),
                         constant(name + ".max", [], [Float(grid.range.upperBound - grid.zeroPoint)])], clipped)
        addNode("Mul", [clipped, scale], name)
        values[index] = name
    }

    /// A quantized graph input: the integers q the user feeds as the real values (q − z) · s.
    mutating func realValues(ofIntegers input: String, _ grid: TFLiteGrid, into output: String) {
        let centred = unique(output + ".centred")
        addNode("Sub", [input, constant(output + ".zero_point", [], [Float(grid.zeroPoint)])], centred)
        addNode("Mul", [centred, constant(output + ".scale", [], [grid.scale])], output)
    }

    /// A quantized graph output: its real values, on the grid, as the integers q = x / s + z.
    mutating func integers(ofRealValues input: String, _ grid: TFLiteGrid, into output: String) {
        let steps = unique(output + ".steps"), rounded = unique(output + ".rounded")
        addNode("Div", [input, constant(output + ".scale", [], [grid.scale])], steps)
        roundHalfAwayFromZero(steps, into: rounded)
        addNode("Add", [rounded, constant(output + ".zero_point", [], [Float(grid.zeroPoint)])], output)
    }

    /// `input` rounded to the nearest integer, ties away from zero as TFLite
    /// rounds: sign(x) · floor(|x| + 0.5).
    mutating func roundHalfAwayFromZero(_ input: String, into output: String) {
        let magnitude = unique(output + ".magnitude"), shifted = unique(output + ".shifted")
        let floored = unique(output + ".floored"), sign = unique(output + ".sign")
        addNode("Abs", [input], magnitude)
        addNode("Add", [magnitude, constant(output + ".half", [], [0.5])], shifted)
        addNode("Floor", [shifted], floored)
        addNode("Sign", [input], sign)
        addNode("Mul", [floored, sign], output)
    }
}
