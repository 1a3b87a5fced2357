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
        try Self.requireBlockSize(blockSize, layer: "DepthToSpace")
        (self.blockSize, self.mode) = (blockSize, mode)
    }

    /// Throws unless `blockSize` is from 1 to 65536 (DepthToSpace's and
    /// SpaceToDepth's bound: b² and the extents times b stay small).
    static func requireBlockSize(_ blockSize: Int, layer: String) throws {
        guard blockSize >= 1, blockSize <= 1 << 16 else {
            throw LayerKitError.invalidParameter("\(layer): blocksize \(blockSize) must be from 1 to 65536")
        }
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

    /// The output plane by plane, each element from its block's channel.
    func moveElements<Element>(inputs: [UnsafeBufferPointer<Element>], inputShapes: [[Int]],
                               outputs: [UnsafeMutableBufferPointer<Element>]) throws {
        let (depth, space) = (inputShapes[0], try outputShapes(forInputShapes: inputShapes)[0])
        Self.moveBlocks(from: inputs[0], to: outputs[0], space: space, depth: depth, blockSize: blockSize, mode: mode,
                        toDepth: false)
    }

    /// The element movement DepthToSpace and SpaceToDepth share (each is
    /// the other's inverse): element `[n, c, h b + i, w b + j]` of the
    /// space form `[N, C, H b, W b]` is element `[n, k, h, w]` of the depth
    /// form `[N, C b², H, W]`, with `k = (i b + j) C + c` in DCR mode and
    /// `c b² + i b + j` in CRD. `toDepth` copies the space form `source`
    /// into the depth form `destination` (SpaceToDepth), otherwise the
    /// reverse (DepthToSpace); `space` and `depth` are the two shapes. One
    /// space-form plane (n, c) per work item, threaded; it is walked in
    /// order, the depth form strided.
    static func moveBlocks<Element>(from source: UnsafeBufferPointer<Element>, to destination: UnsafeMutableBufferPointer<Element>,
                                    space: [Int], depth: [Int], blockSize b: Int, mode: Mode, toDepth: Bool) {
        let (batch, channels, height, width) = (space[0], space[1], depth[2], depth[3])
        guard batch > 0, channels > 0, height > 0, width > 0, source.baseAddress != nil,
              destination.baseAddress != nil else { return }
        let (plane, depthChannels) = (space[2] * space[3], depth[1])
        let buffers = SendableBuffers(input: source, output: destination)
        forEachChunk(count: batch * channels, chunkSize: max(1, defaultChunkSize / plane),
                     threadCount: CPUThreads.current) { range in
            guard let from = buffers.input.baseAddress, let to = buffers.output.baseAddress else { return }
            for item in range {
                let (n, c) = item.quotientAndRemainder(dividingBy: channels)
                var spaceIndex = item * plane
                for h in 0..<height {
                    for i in 0..<b {
                        for w in 0..<width {
                            for j in 0..<b {
                                let k = mode == .dcr ? (i * b + j) * channels + c : (c * b + i) * b + j
                                let depthIndex = ((n * depthChannels + k) * height + h) * width + w
                                if toDepth { to[depthIndex] = from[spaceIndex] } else { to[spaceIndex] = from[depthIndex] }
                                spaceIndex += 1
                            }
                        }
                    }
                }
            }
        }
    }
}
