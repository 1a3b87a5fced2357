import Foundation

/// ONNX DepthToSpace: blocks of `blockSize x blockSize` channels of an
/// NCHW input become spatial blocks, `[N, C, H, W] -> [N, C / b², H b, W b]`.
/// DCR mode (the default) takes block position (i, j) from channel
/// `(i b + j) C/b² + c`, CRD mode from `c b² + i b + j`. CPU only (threaded).
public final class DepthToSpaceLayer: ElementMovingLayer, Sendable {
    /// Where a block's channels come from.
    public enum Mode: String, Sendable {
        /// Depth, column, row: the block position is the outer channel index.
        case dcr = "DCR"
        /// Column, row, depth: the block position is the inner channel index.
        case crd = "CRD"
    }

    public let blockSize: Int
    public let mode: Mode

    /// A depth-to-space by `blockSize` (>= 1) in `mode`.
    public init(blockSize: Int, mode: Mode = .dcr) throws {
        guard blockSize >= 1, blockSize <= 1 << 16 else {
            throw LayerKitError.invalidParameter("DepthToSpace: blocksize \(blockSize) must be from 1 to 65536")
        }
        (self.blockSize, self.mode) = (blockSize, mode)
    }

    public var layerName: String { "DepthToSpace" }

    /// `[N, C / b², H b, W b]`; throws unless the input is rank 4 with C a multiple of b².
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        try LayerChecks.requireRank(shape, in: 4...4, layer: layerName)
        let square = blockSize * blockSize
        guard shape[1] % square == 0 else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): \(shape[1]) channels are not a multiple of blocksize² = \(square)")
        }
        let (h, hOverflow) = shape[2].multipliedReportingOverflow(by: blockSize)
        let (w, wOverflow) = shape[3].multipliedReportingOverflow(by: blockSize)
        guard !hOverflow, !wOverflow else { throw LayerKitError.shapeMismatch("\(layerName): the output extents overflow") }
        let output = [shape[0], shape[1] / square, h, w]
        _ = try Tensor.elementCount(of: output)
        return [output]
    }

    /// Output row (n, c, y) by output row, each from `blockSize` input rows' strided elements.
    func moveElements<Element>(inputs: [UnsafeBufferPointer<Element>], inputShapes: [[Int]],
                               outputs: [UnsafeMutableBufferPointer<Element>]) throws {
        let output = try outputShapes(forInputShapes: inputShapes)[0]
        guard try Tensor.elementCount(of: output) > 0,
              let source = inputs[0].baseAddress, let destination = outputs[0].baseAddress else { return }
        let (b, shape) = (blockSize, inputShapes[0])
        let (channels, height, width) = (output[1], shape[2], shape[3])
        let plane = output[2] * output[3]
        let buffers = SendableBuffers(input: UnsafeBufferPointer(start: source, count: inputs[0].count),
                                      output: UnsafeMutableBufferPointer(start: destination, count: outputs[0].count))
        let mode = mode
        // One output plane (n, c) per work item, written in order.
        forEachChunk(count: output[0] * channels, chunkSize: max(1, defaultChunkSize / plane),
                     threadCount: CPUThreads.current) { range in
            guard let from = buffers.input.baseAddress, let to = buffers.output.baseAddress else { return }
            for item in range {
                let (n, c) = item.quotientAndRemainder(dividingBy: channels)
                var target = to + item * plane
                for h in 0..<height {
                    for i in 0..<b {
                        for w in 0..<width {
                            for j in 0..<b {
                                let inC = mode == .dcr ? (i * b + j) * channels + c : (c * b + i) * b + j
                                target.pointee = from[((n * shape[1] + inC) * height + h) * width + w]
                                target += 1
                            }
                        }
                    }
                }
            }
        }
    }
}
