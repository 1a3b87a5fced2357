import CKernels
import Foundation

/// ONNX `Where(condition, X, Y)`: `X` where the condition is non-zero (bool
/// tensors are float 0/1 in LayerKit; NaN counts as true), else `Y`, the
/// three inputs broadcast together (numpy's rule, any ranks). The picked
/// value is copied bit for bit. CPU only.
public final class WhereLayer: Layer, Sendable {
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
}
