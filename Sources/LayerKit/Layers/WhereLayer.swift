import CKernels
import Foundation

/// ONNX `Where(condition, X, Y)`: `X` where the condition is non-zero (bool
/// tensors are float 0/1 in LayerKit; NaN counts as true), else `Y`, the
/// three inputs broadcast together (numpy's rule, any ranks). The picked
/// value is copied bit for bit.
///
/// The GPU form (`where.comp`) takes inputs of the output's rank (1 to 4)
/// or of one element, as `BinaryLayer`'s does; others run on the CPU.
public final class WhereLayer: Layer, ShapeLimitedGPULayer, Sendable {
    public var layerName: String { "Where" }

    public init() {}

    /// The broadcast shape of condition, X and Y.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 3, layer: layerName)
        return [try BroadcastPlan(inputShapes, layer: layerName).shape]
    }

    /// Runs of `lk_select_f32`; a condition constant along a run picks one side for all of it.
    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        try LayerChecks.requireInputCount(inputs.map(\.shape), 3, layer: layerName)
        let plan = try BroadcastPlan(inputs.map(\.shape), layer: layerName)
        try LayerChecks.requireOutput(outputs, plan.shape, layer: layerName)
        let (c, x, y, result) = (inputs[0], inputs[1], inputs[2], outputs[0])
        let strides = plan.runStrides
        forEachChunk(count: result.count, threadCount: CPUThreads.current) { range in
            plan.forEachRun(in: range) { output, offsets, n in
                let (pc, px, py, out) = (c.dataPointer + offsets[0], x.dataPointer + offsets[1],
                                         y.dataPointer + offsets[2], result.dataPointer + output)
                if strides[0] == 0 {
                    let (source, stride) = pc.pointee != 0 ? (px, strides[1]) : (py, strides[2])
                    if stride == 0 { out.update(repeating: source.pointee, count: n) } else { out.update(from: source, count: n) }
                } else {
                    lk_select_f32(pc, px, strides[1], py, strides[2], out, n)
                }
            }
        }
    }

    public var hasGPUImplementation: Bool { true }

    func whyNotGPU(inputShapes: [[Int]], outputShapes: [[Int]]) -> String? {
        BroadcastPlan.whyNotGPU(inputShapes: inputShapes, outputShapes: outputShapes)
    }

    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws {
        _ = try BuiltInShaders.select.kernel(on: context)
    }

    /// One invocation per output texel, each operand read at its broadcast texel.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 3, outputs.count == 1 else {
            throw LayerKitError.shapeMismatch("Where takes 3 input images and 1 output image")
        }
        let output = outputs[0]
        var operands: [BinaryConstants.Operand] = []
        for input in inputs {
            for (extent, full) in zip(input.shape, output.shape) where extent != full && extent != 1 {
                throw LayerKitError.shapeMismatch(
                    "Where: input image \(Tensor.describe(input.shape)) does not broadcast to \(Tensor.describe(output.shape))")
            }
            operands.append(.init(width: UInt32(input.width), height: UInt32(input.height),
                                  channels: UInt32(input.featureChannels), batch: UInt32(input.batch)))
        }
        let constants = WhereConstants(shape: output.shapeConstants, condition: operands[0], x: operands[1], y: operands[2])
        try commandBuffer.dispatch(BuiltInShaders.select.kernel(on: commandBuffer.context), images: inputs + [output],
                                   constants: constants, threads: output.threads)
    }
}
