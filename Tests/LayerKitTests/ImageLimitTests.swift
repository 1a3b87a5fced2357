import Foundation
import Testing
@testable import LayerKit

/// Tensors past the device's image limits: per-element layers run in pieces
/// that fit (and agree with the CPU), other layers get an error naming the limit.
struct ImageLimitTests {
    // MARK: Cutting (no GPU)

    /// Every element lands in exactly one piece, and every piece fits.
    @Test(arguments: [
        [1, 37, 1, 1], [3, 29, 2, 1], [2, 5, 9, 11], [1, 1, 1, 17], [4, 3, 7, 4], [1, 41, 5, 3],
    ])
    func piecesTileTheTensorAndFit(shape: [Int]) throws {
        let (n, c, h, w) = (shape[0], shape[1], shape[2], shape[3])
        let plan = ImagePieces(n: n, c: c, h: h, w: w, maxDimension: 4, maxLayers: 3)
        var hits = [Int](repeating: 0, count: n * c * h * w)
        for piece in plan.pieces {
            #expect(ImagePieces.fits(n: piece.batches.count, c: piece.channels.count, h: piece.rows.count,
                                     w: piece.columns.count, maxDimension: 4, maxLayers: 3), "\(piece)")
            #expect(piece.channels.lowerBound % 4 == 0, "a piece must start on a slice: \(piece)")
            for b in piece.batches { for ch in piece.channels { for y in piece.rows { for x in piece.columns {
                hits[((b * c + ch) * h + y) * w + x] += 1
            } } } }
        }
        #expect(hits.allSatisfy { $0 == 1 })
    }

    @Test func copyAndPasteRoundTripAPiece() throws {
        let whole = try Tensor(shape: [2, 6, 3, 5], values: (0..<180).map(Float.init))
        let piece = ImagePieces.Piece(batches: 1..<2, channels: 4..<6, rows: 1..<3, columns: 2..<5)
        let part = try whole.copy(piece)
        #expect(part.shape == [1, 2, 2, 3])
        // (n 1, c 4, y 1, x 2) is element ((1*6+4)*3+1)*5+2 = 157.
        #expect(part[0] == 157)
        let target = try Tensor(shape: whole.shape)
        try target.paste(part, at: piece)
        for i in 0..<whole.count {
            let (x, y, ch, b) = (i % 5, i / 5 % 3, i / 15 % 6, i / 90)
            let inside = piece.batches.contains(b) && piece.channels.contains(ch)
                && piece.rows.contains(y) && piece.columns.contains(x)
            #expect(target[i] == (inside ? whole[i] : 0))
        }
    }

    // MARK: On the device

    /// Shapes just past the device's limits, read from `device.info`: too
    /// many slices for one item, too many batch × slices, too wide, too tall.
    static func shapesPastTheLimits(_ context: GPUContext) -> [[Int]] {
        let layers = Int(context.deviceInfo.maxImageArrayLayers)
        let side = Int(context.deviceInfo.maxImageDimension2D)
        let slicesPerItem = layers / 3 + 3  // 3 items overflow, one fits
        return [
            [1, 4 * layers + 8, 1, 1],
            [3, 4 * slicesPerItem - 1, 1, 2],
            [1, 1, 1, side + 1],
            [1, 2, side + 1, 1],
        ]
    }

    static func blob(_ values: [Float]) -> Data { values.withUnsafeBufferPointer { Data(buffer: $0) } }

    /// PRelu (per-channel slope), Swish (per-channel beta) and the two fused.
    static func perChannelLayers(channels: Int) throws -> [PerElementLayer] {
        let slope = try Tensor.uniform(shape: [channels], in: -2...2, seed: 11).values
        let beta = try Tensor.uniform(shape: [channels], in: 0.25...2, seed: 12).values
        let prelu = try ElementwiseLayer(parameters: ["op": "PRelu"])
        try prelu.setWeightData([blob(slope)])
        let swish = try Swish()
        try swish.setWeightData([blob(beta)])
        return [prelu, swish, try FusedLayer([prelu, swish])]
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func perElementLayersPastTheLimitsMatchTheCPU() throws {
        let context = try TestGPU.get()
        for shape in Self.shapesPastTheLimits(context) {
            let input = try Tensor.uniform(shape: shape, in: -6...6, seed: 5).roundedToHalf()
            #expect(try !context.fitsOneImage(input))
            for layer in try Self.perChannelLayers(channels: shape[1]) {
                let gpuRun = try Backend(computeUnits: .gpu, context: context).run(layer, inputs: [input])
                #expect(gpuRun.placement == .gpu)
                // Streamed: one submission, with its four marks, per piece.
                let labels = gpuRun.gpuTimestamps.map(\.label)
                #expect(labels.count >= 8 && labels.count % 4 == 0 || !context.deviceInfo.supportsTimestamps)
                #expect(labels == Array(repeating: ["start", "upload", "kernel", "download"], count: labels.count / 4)
                    .flatMap { $0 })
                let cpu = try Backend(computeUnits: .cpuOnly).run(layer, inputs: [input]).outputs[0]
                let report = try ParityReport(gpu: gpuRun.outputs[0], cpu: cpu)
                #expect(report.passed, "\(layer.layerName) \(Tensor.describe(shape)): \(report)")
            }
        }
    }

    /// A layer with its own kernel that does not declare itself per-element.
    final class OpaqueDouble: CustomLayer {
        static let name = "OpaqueDouble"
        init(parameters: [String: Any]) throws {}
        func setWeightData(_ weights: [Data]) throws {}
        func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] { inputShapes }
        func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
            doubleEachElement(inputs: inputs, outputs: outputs)
        }
        var hasGPUImplementation: Bool { true }
        func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
            try commandBuffer.dispatch(PerElementKernel(name: "OpaqueDouble", body: "2.0 * x"),
                                       input: inputs[0], output: outputs[0])
        }
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func otherLayersPastTheLimitsRunOnTheCPUNamingTheLimitAndTheDeviceStaysUsable() throws {
        let context = try TestGPU.get()
        let notices = BackendTests.Notices()
        let backend = try Backend(computeUnits: .gpu, context: context, notice: notices.append)
        let layer = try OpaqueDouble(parameters: [:])
        let limitNames = ["maxImageArrayLayers", "maxImageArrayLayers", "maxImageDimension2D", "maxImageDimension2D"]
        for (shape, limit) in zip(Self.shapesPastTheLimits(context), limitNames) {
            let input = try Tensor(shape: shape, values: (0..<shape.reduce(1, *)).map { Float($0 % 7) - 3 })
            let run = try backend.run(layer, inputs: [input])
            guard case .cpu(let reason?) = run.placement else {
                Issue.record("\(Tensor.describe(shape)) ran on the GPU")
                continue
            }
            #expect(reason.contains(limit), "\(Tensor.describe(shape)): \(reason)")
            #expect(run.outputs[0].values == input.values.map { 2 * $0 })
        }
        // One notice per shape, each naming its limit.
        #expect(zip(notices.all, limitNames).allSatisfy { $0.contains($1) } && notices.all.count == limitNames.count)
        let small = try Tensor(shape: [1, 1, 1, 3], values: [1, -2, 3])
        #expect(try backend.run(layer, inputs: [small]).outputs[0].values == [2, -4, 6])
    }

    /// A per-element layer run on its own streams a tensor larger than one
    /// piece (`ModelRun.pieceTexels`) through pieces that each fit it, with
    /// the CPU's result; a model keeps such a value in one image.
    @Test(.enabled(if: TestGPU.isEnabled))
    func aLargeSingleLayerRunIsStreamedInBoundedPieces() throws {
        let context = try TestGPU.get()
        // 3 slices of 1024x512 texels: 1.5 pieces' worth, so at least two pieces.
        let shape = [1, 12, 1024, 512]
        let input = try Tensor.uniform(shape: shape, in: -6...6, seed: 9).roundedToHalf()
        #expect(try context.fitsOneImage(input), "fits the device: only the piece bound splits it")
        let swish = try Swish(beta: 1)
        let backend = try Backend(computeUnits: .gpu, context: context)
        let run = try backend.run(swish, inputs: [input])
        #expect(run.placement == .gpu)
        if context.deviceInfo.supportsTimestamps { #expect(run.gpuTimestamps.count / 4 >= 2, "\(run.gpuTimestamps.count) marks") }
        let pieces = ImagePieces(n: 1, c: 12, h: 1024, w: 512, maxDimension: 16384, maxLayers: 2048,
                                 maxTexels: ModelRun.pieceTexels)
        #expect(pieces.pieces.count >= 2)
        #expect(pieces.pieces.allSatisfy { (($0.channels.count + 3) / 4) * $0.rows.count * $0.columns.count <= ModelRun.pieceTexels })
        let cpu = try Backend(computeUnits: .cpuOnly).run(swish, inputs: [input]).outputs[0]
        let report = try ParityReport(gpu: run.outputs[0], cpu: cpu)
        #expect(report.passed, "\(report)")
        // Control: just under the bound it is one image, one submission.
        let small = try Tensor.uniform(shape: [1, 8, 1024, 512], in: -6...6, seed: 9).roundedToHalf()
        let whole = try backend.run(swish, inputs: [small])
        if context.deviceInfo.supportsTimestamps { #expect(whole.gpuTimestamps.count == 4) }
    }

    /// One slice larger than a piece is cut into rows and columns too.
    @Test func aSliceLargerThanAPieceIsCutIntoTiles() {
        let pieces = ImagePieces(n: 1, c: 3, h: 3000, w: 2000, maxDimension: 16384, maxLayers: 2048,
                                 maxTexels: 1 << 20)
        #expect(pieces.pieces.allSatisfy { $0.rows.count * $0.columns.count <= 1 << 20 })
        #expect(pieces.pieces.reduce(0) { $0 + $1.rows.count * $1.columns.count } == 3000 * 2000 * 1)
    }
}
