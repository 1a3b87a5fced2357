import CKernels
import Foundation

/// An element-wise op on two or more tensors with ONNX multidirectional
/// (numpy) broadcasting: arithmetic (`Add`, `Sub`, `Mul`, `Div`, `Pow`,
/// `Mod`, `Max`, `Min`, `PRelu` with a broadcast slope), comparisons and
/// logic giving 1 or 0 (`Equal`, `Less`, `Greater`, `LessOrEqual`,
/// `GreaterOrEqual`, `And`, `Or`, `Xor`; bool tensors are float 0/1 in
/// LayerKit, non-zero and NaN counting as true), and the variadic `Sum`,
/// `Mean`, `Max`, `Min` (one or more inputs, folded left to right).
///
/// Inputs may differ in rank: the lower is read as if padded with leading
/// 1s. In each axis their extents are equal or 1, and the output takes the
/// larger. Arithmetic follows IEEE 754 on both paths: `x / 0` is ±inf,
/// `0 / 0` NaN; `Max`/`Min` give NaN when either side is NaN.
///
/// The GPU form (`binary.comp`, one dispatch per input after the first)
/// takes inputs of the output's rank (1 to 4), or of one element: a
/// lower-rank tensor's image is not laid out as its padded shape's, so a
/// model runs such a step on the CPU (`whyNotGPU(inputShapes:outputShapes:)`),
/// and the ONNX importer pads constant operands to rank itself.
public final class BinaryLayer: Layer, ShapeLimitedGPULayer, Sendable {
    /// The element-wise op.
    public enum Operation: Sendable, CaseIterable {
        /// `a + b` (ONNX Add, Sum).
        case add
        /// `a - b` (ONNX Sub).
        case sub
        /// `a * b` (ONNX Mul).
        case mul
        /// `a / b` (ONNX Div).
        case div
        /// `powf(a, b)` (ONNX Pow with a tensor exponent).
        case pow
        /// The larger, NaN if either is (ONNX Max).
        case max
        /// The smaller, NaN if either is (ONNX Min).
        case min
        /// The remainder with the sign of the divisor, Python's `%` (ONNX Mod, fmod = 0).
        case mod
        /// The remainder with the sign of the dividend, C's `fmod` (ONNX Mod, fmod = 1).
        case fmod
        /// `a == b` as 1 or 0.
        case equal
        /// `a < b` as 1 or 0.
        case less
        /// `a > b` as 1 or 0.
        case greater
        /// `a <= b` as 1 or 0.
        case lessOrEqual
        /// `a >= b` as 1 or 0.
        case greaterOrEqual
        /// Both non-zero, as 1 or 0.
        case and
        /// Either non-zero, as 1 or 0.
        case or
        /// Exactly one non-zero, as 1 or 0.
        case xor
        /// `a` where `a >= 0`, else `a * b` (ONNX PRelu, `b` the slope).
        case prelu

        /// The ONNX op name.
        public var onnxName: String {
            switch self {
            case .add: "Add"
            case .sub: "Sub"
            case .mul: "Mul"
            case .div: "Div"
            case .pow: "Pow"
            case .max: "Max"
            case .min: "Min"
            case .mod, .fmod: "Mod"
            case .equal: "Equal"
            case .less: "Less"
            case .greater: "Greater"
            case .lessOrEqual: "LessOrEqual"
            case .greaterOrEqual: "GreaterOrEqual"
            case .and: "And"
            case .or: "Or"
            case .xor: "Xor"
            case .prelu: "PRelu"
            }
        }
    }

    /// The op this layer applies.
    public let operation: Operation
    /// How many inputs the layer takes: 2, or any from 1 for a variadic op.
    public let inputCount: Int
    /// Whether the result is divided by `inputCount` (ONNX Mean).
    public let average: Bool
    /// The op name in reports.
    public let layerName: String

    /// A layer computing `a operation b`.
    public init(_ operation: Operation) {
        (self.operation, inputCount, average, layerName) = (operation, 2, false, operation.onnxName)
    }

    /// A variadic layer folding `inputCount` inputs with `operation` (`Sum`:
    /// `.add`; `Mean`: `.add` with `average`; `Max`, `Min`).
    public init(_ operation: Operation, inputCount: Int, average: Bool = false, name: String) throws {
        guard inputCount >= 1 else {
            throw LayerKitError.invalidParameter("\(name) takes at least one input, got \(inputCount)")
        }
        (self.operation, self.inputCount, self.average, layerName) = (operation, inputCount, average, name)
    }

    /// The broadcast shape of the inputs; throws unless every axis
    /// (counted from the last) has equal extents or 1s.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, inputCount, layer: layerName)
        return [try BroadcastPlan(inputShapes, layer: layerName).shape]
    }

    /// Runs the op with SIMD kernels: same shapes, per-channel and scalar
    /// operands each become long runs of one vector call. Three or more
    /// inputs fold into the output in place.
    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shapes = inputs.map(\.shape)
        try LayerChecks.requireInputCount(shapes, inputCount, layer: layerName)
        let shape = try BroadcastPlan(shapes, layer: layerName).shape
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        let result = outputs[0]
        if inputs.count == 1 {
            result.dataPointer.update(from: inputs[0].dataPointer, count: result.count)
        } else {
            try apply(inputs[0], inputs[1], into: result)
            for input in inputs.dropFirst(2) { try apply(result, input, into: result) }
        }
        if average, inputs.count > 1 {
            let count = Float(inputs.count)
            forEachChunk(count: result.count, threadCount: CPUThreads.current) { range in
                var n = count
                lk_binary_f32(LK_DIV, result.dataPointer + range.lowerBound, 1, &n, 0,
                              result.dataPointer + range.lowerBound, range.count)
            }
        }
    }

    /// `result = x op y`, broadcast; `result` may be `x` when it has the output's shape.
    private func apply(_ x: Tensor, _ y: Tensor, into result: Tensor) throws {
        let plan = try BroadcastPlan(x.shape, y.shape, layer: layerName)
        let operation = operation
        forEachChunk(count: result.count, threadCount: CPUThreads.current) { range in
            plan.forEachRun(in: range) { output, a, b, n in
                let (pa, pb, py) = (x.dataPointer + a, y.dataPointer + b, result.dataPointer + output)
                if operation == .prelu {
                    // y = a * slope, then a where a >= 0 (NaN fails the test, as in the catalog's PRelu).
                    var zero: Float = 0
                    lk_binary_f32(LK_MUL, pa, plan.runStrideA, pb, plan.runStrideB, py, n)
                    lk_select_cmp_f32(LK_GE, pa, plan.runStrideA, &zero, 0, pa, plan.runStrideA, py, 1, py, n)
                } else {
                    lk_binary_f32(operation.primitive, pa, plan.runStrideA, pb, plan.runStrideB, py, n)
                }
            }
        }
    }

    public var hasGPUImplementation: Bool { true }

    /// Inputs the shader cannot read at their broadcast places: tensors of
    /// another rank than the output (unless one element), ranks outside 1...4.
    func whyNotGPU(inputShapes: [[Int]], outputShapes: [[Int]]) -> String? {
        BroadcastPlan.whyNotGPU(inputShapes: inputShapes, outputShapes: outputShapes)
    }

    /// Creates the pipelines of this operation on `context`, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws {
        _ = try kernel(glslExpression, on: context)
        if inputCount == 1 { _ = try kernel("(a)", on: context) }
        if average { _ = try kernel(averageExpression, on: context) }
    }

    private func kernel(_ expression: String, on context: GPUContext) throws -> GPUKernel<BinaryConstants> {
        try BuiltInShaders.binary.kernel(on: context, defines: [("LK_OP(a, b)", expression)])
    }

    /// The last step of a Mean: the sum divided by the input count.
    private var averageExpression: String { "(((a) + (b)) / \(Expr.glslLiteral(Float(inputCount))))" }

    /// One invocation per output texel; each operand is read at its
    /// broadcast coordinates (a one-channel operand's lane 0 feeds all four
    /// lanes). Inputs after the second fold into the output image in place
    /// (each invocation reads and writes only its own texel).
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == inputCount, outputs.count == 1 else {
            throw LayerKitError.shapeMismatch("\(layerName) takes \(inputCount) input images and 1 output image")
        }
        let output = outputs[0]
        for input in inputs {
            for (extent, full) in zip(input.shape, output.shape) where extent != full && extent != 1 {
                throw LayerKitError.shapeMismatch(
                    "\(layerName): input image \(Tensor.describe(input.shape)) does not broadcast to \(Tensor.describe(output.shape))")
            }
        }
        let context = commandBuffer.context
        if inputs.count == 1 {
            try dispatch(kernel("(a)", on: context), inputs[0], inputs[0], output, commandBuffer)
            return
        }
        for k in 1..<inputs.count {
            let last = k == inputs.count - 1
            let expression = last && average ? averageExpression : glslExpression
            try dispatch(kernel(expression, on: context), k == 1 ? inputs[0] : output, inputs[k], output, commandBuffer)
        }
    }

    private func dispatch(_ kernel: GPUKernel<BinaryConstants>, _ lhs: SliceImage, _ rhs: SliceImage,
                          _ output: SliceImage, _ commandBuffer: GPUCommandBuffer) throws {
        func operand(_ image: SliceImage) -> BinaryConstants.Operand {
            .init(width: UInt32(image.width), height: UInt32(image.height),
                  channels: UInt32(image.featureChannels), batch: UInt32(image.batch))
        }
        let constants = BinaryConstants(shape: output.shapeConstants, lhs: operand(lhs), rhs: operand(rhs))
        try commandBuffer.dispatch(kernel, images: [lhs, rhs, output], constants: constants, threads: output.threads)
    }

    private var glslExpression: String {
        switch operation {
        case .add: "((a) + (b))"
        case .sub: "((a) - (b))"
        case .mul: "((a) * (b))"
        case .div: "lk_div(a, b)"
        case .pow: "lk_pow(a, b)"
        case .max: "lk_max(a, b)"
        case .min: "lk_min(a, b)"
        case .mod: "lk_imod(a, b)"
        case .fmod: "lk_fmod(a, b)"
        case .equal: "vec4(equal(a, b))"
        case .less: "vec4(lessThan(a, b))"
        case .greater: "vec4(greaterThan(a, b))"
        case .lessOrEqual: "vec4(lessThanEqual(a, b))"
        case .greaterOrEqual: "vec4(greaterThanEqual(a, b))"
        case .and: "(lk_truth(a) * lk_truth(b))"
        case .or: "max(lk_truth(a), lk_truth(b))"
        case .xor: "vec4(notEqual(lk_truth(a), lk_truth(b)))"
        case .prelu: "mix((a) * (b), a, greaterThanEqual(a, vec4(0.0)))"
        }
    }
}

extension BinaryLayer.Operation {
    /// The C primitive computing this op (PRelu is two: see `apply`).
    var primitive: lk_binary_op {
        switch self {
        case .add: LK_ADD
        case .sub: LK_SUB
        case .mul, .prelu: LK_MUL
        case .div: LK_DIV
        case .pow: LK_POW
        case .max: LK_MAX
        case .min: LK_MIN
        case .mod: LK_IMOD
        case .fmod: LK_FMOD
        case .equal: LK_EQ
        case .less: LK_LT
        case .greater: LK_GT
        case .lessOrEqual: LK_LE
        case .greaterOrEqual: LK_GE
        case .and: LK_AND
        case .or: LK_OR
        case .xor: LK_XOR
        }
    }
}
