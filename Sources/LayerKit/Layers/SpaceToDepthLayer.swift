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
        guard blockSize >= 1, blockSize <= 1 << 16 else {
            throw LayerKitError.invalidParameter("SpaceToDepth: blocksize \(blockSize) must be from 1 to 65536")
        }
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

    /// Input row by input row (n, c, y), each element to its block's channel.
    func moveElements<Element>(inputs: [UnsafeBufferPointer<Element>], inputShapes: [[Int]],
                               outputs: [UnsafeMutableBufferPointer<Element>]) throws {
        let output = try outputShapes(forInputShapes: inputShapes)[0]
        guard try Tensor.elementCount(of: output) > 0,
              let source = inputs[0].baseAddress, let destination = outputs[0].baseAddress else { return }
        let (b, shape) = (blockSize, inputShapes[0])
        let (channels, height, width) = (shape[1], output[2], output[3])
        let plane = shape[2] * shape[3]
        let buffers = SendableBuffers(input: UnsafeBufferPointer(start: source, count: inputs[0].count),
                                      output: UnsafeMutableBufferPointer(start: destination, count: outputs[0].count))
        let (mode, outChannels) = (mode, output[1])
        // One input plane (n, c) per work item: its elements land in b² output planes of its own.
        forEachChunk(count: output[0] * channels, chunkSize: max(1, defaultChunkSize / plane),
                     threadCount: CPUThreads.current) { range in
            guard let from = buffers.input.baseAddress, let to = buffers.output.baseAddress else { return }
            for item in range {
                let (n, c) = item.quotientAndRemainder(dividingBy: channels)
                var element = from + item * plane
                for y in 0..<shape[2] {
                    let (h, i) = y.quotientAndRemainder(dividingBy: b)
                    for x in 0..<shape[3] {
                        let (w, j) = x.quotientAndRemainder(dividingBy: b)
                        let outC = mode == .dcr ? (i * b + j) * channels + c : (c * b + i) * b + j
                        to[((n * outChannels + outC) * height + h) * width + w] = element.pointee
                        element += 1
                    }
                }
            }
        }
    }
}
