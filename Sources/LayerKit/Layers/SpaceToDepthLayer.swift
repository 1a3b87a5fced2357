import Foundation

/// ONNX SpaceToDepth, DepthToSpace's inverse: each `blockSize x
/// blockSize` spatial block of an NCHW input becomes channels,
/// `[N, C, H, W] -> [N, C b², H / b, W / b]`, block position (i, j) of
/// channel c going to channel `(i b + j) C + c` (DCR, the default) or
/// `c b² + i b + j` (CRD, opset 28). CPU only (threaded).
public final class SpaceToDepthLayer: ElementMovingLayer, Sendable {
    public let blockSize: Int
    public let mode: DepthToSpaceLayer.Mode

    /// A space-to-depth by `blockSize` (>= 1) in `mode`.
    public init(blockSize: Int, mode: DepthToSpaceLayer.Mode = .dcr) throws {
        try DepthToSpaceLayer.requireBlockSize(blockSize, layer: "SpaceToDepth")
        (self.blockSize, self.mode) = (blockSize, mode)
    }

    public var layerName: String { "SpaceToDepth" }

    /// `[N, C b², H / b, W / b]`; throws unless the input is rank 4 with H and W multiples of b.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        try LayerChecks.requireRank(shape, in: 4...4, layer: layerName)
        guard shape[2] % blockSize == 0, shape[3] % blockSize == 0 else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): height \(shape[2]) and width \(shape[3]) must be multiples of blocksize \(blockSize)")
        }
        let (c, overflow) = shape[1].multipliedReportingOverflow(by: blockSize * blockSize)
        guard !overflow else { throw LayerKitError.shapeMismatch("\(layerName): the output channels overflow") }
        let output = [shape[0], c, shape[2] / blockSize, shape[3] / blockSize]
        _ = try Tensor.elementCount(of: output)
        return [output]
    }

    /// The input plane by plane, each element to its block's channel.
    func moveElements<Element>(inputs: [UnsafeBufferPointer<Element>], inputShapes: [[Int]],
                               outputs: [UnsafeMutableBufferPointer<Element>]) throws {
        let (space, depth) = (inputShapes[0], try outputShapes(forInputShapes: inputShapes)[0])
        DepthToSpaceLayer.moveBlocks(from: inputs[0], to: outputs[0], space: space, depth: depth, blockSize: blockSize,
                                     mode: mode, toDepth: true)
    }
}
