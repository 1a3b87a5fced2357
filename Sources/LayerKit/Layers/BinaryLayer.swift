import CKernels
import Foundation

/// An element-wise arithmetic op on two tensors with ONNX multidirectional
/// broadcasting: `Add`, `Sub`, `Mul` and `Div`.
///
/// Both inputs have the same rank (a model converter left-pads the lower
/// rank with 1s, as ONNX does); in each dimension their extents are equal or
/// one of them is 1, and the output takes the larger. Either input may be a
/// constant. Arithmetic follows IEEE 754 on both paths: `x / 0` is ±inf,
/// `0 / 0` NaN.
public final class BinaryLayer: Layer, Sendable {
    /// The arithmetic op.
    public enum Operation: Sendable, CaseIterable {
        /// `a + b` (ONNX Add).
        case add
        /// `a - b` (ONNX Sub).
        case sub
        /// `a * b` (ONNX Mul).
        case mul
        /// `a / b` (ONNX Div).
        case div
    }

    /// The op this layer applies.
    public let operation: Operation
    /// The pipeline `prepare` made on each context.
    private let gpuKernel = PerContext<GPUKernel<BinaryConstants>>()

    /// A layer computing `a operation b`.
    public init(_ operation: Operation) { self.operation = operation }

    /// "Add", "Sub", "Mul" or "Div".
    public var layerName: String {
        switch operation {
        case .add: "Add"
        case .sub: "Sub"
        case .mul: "Mul"
        case .div: "Div"
        }
    }

    /// The broadcast shape of the two inputs; throws unless they have the
    /// same rank and every pair of extents is equal or has a 1.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 2, layer: layerName)
        return [try BroadcastPlan(inputShapes[0], inputShapes[1], layer: layerName).shape]
    }

    /// Runs the op with SIMD kernels: same shapes, per-channel and scalar
    /// operands each become long runs of one vector call.
    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        try LayerChecks.requireInputCount(inputs.map(\.shape), 2, layer: layerName)
        let plan = try BroadcastPlan(inputs[0].shape, inputs[1].shape, layer: layerName)
        try LayerChecks.requireOutput(outputs, plan.shape, layer: layerName)
        let op = primitive
        let (x, y, result) = (inputs[0], inputs[1], outputs[0])
        forEachChunk(count: outputs[0].count, threadCount: CPUThreads.current) { range in
            plan.forEachRun(in: range) { output, a, b, n in
                lk_binary_f32(op, x.dataPointer + a, plan.runStrideA, y.dataPointer + b, plan.runStrideB,
                              result.dataPointer + output, n)
            }
        }
    }

    public var hasGPUImplementation: Bool { true }

    /// Creates the pipeline of this operation on `context`, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try kernel(on: context) }

    private func kernel(on context: GPUContext) throws -> GPUKernel<BinaryConstants> {
        try gpuKernel.value(on: context) {
            try BuiltInShaders.binary.kernel(on: context, defines: [("LK_OP(a, b)", glslExpression)])
        }
    }

    /// One invocation per output texel; each operand is read at its
    /// broadcast coordinates (a one-channel operand's lane 0 feeds all four lanes).
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 2, outputs.count == 1 else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 2 input images and 1 output image")
        }
        let output = outputs[0]
        var operands: [BinaryConstants.Operand] = []
        for input in inputs {
            for (extent, full) in zip(input.shape, output.shape) where extent != full && extent != 1 {
                throw LayerKitError.shapeMismatch(
                    "\(layerName): input image \(Tensor.describe(input.shape)) does not broadcast to \(Tensor.describe(output.shape))")
            }
            operands.append(.init(width: UInt32(input.width), height: UInt32(input.height),
                                  channels: UInt32(input.featureChannels), batch: UInt32(input.batch)))
        }
        let constants = BinaryConstants(shape: output.shapeConstants, lhs: operands[0], rhs: operands[1])
        try commandBuffer.dispatch(kernel(on: commandBuffer.context), images: inputs + [output], constants: constants,
                                   threads: output.threads)
    }

    private var primitive: lk_binary_op {
        switch operation {
        case .add: LK_ADD
        case .sub: LK_SUB
        case .mul: LK_MUL
        case .div: LK_DIV
        }
    }

    private var glslExpression: String {
        switch operation {
        case .add: "((a) + (b))"
        case .sub: "((a) - (b))"
        case .mul: "((a) * (b))"
        case .div: "lk_div(a, b)"
        }
    }
}
