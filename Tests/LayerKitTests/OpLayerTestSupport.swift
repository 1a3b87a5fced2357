import Foundation
import Testing
@testable import LayerKit

/// Running the standard op layers on either backend and checking them
/// against float64 references computed in the tests.
enum OpLayerTest {
    /// `layer` on the CPU, into outputs of the shapes it reports.
    static func cpu(_ layer: Layer, _ inputs: [Tensor]) throws -> [Tensor] {
        let shapes = try layer.outputShapes(forInputShapes: inputs.map(\.shape))
        let outputs = try shapes.map { try Tensor(shape: $0) }
        try layer.evaluate(inputs: inputs, outputs: outputs)
        return outputs
    }

    /// `layer` on the GPU: each input uploaded to a slice image of its
    /// model image shape, the outputs downloaded back into tensor shapes.
    /// Also checks that the outputs' padding lanes are zero.
    static func gpu(_ layer: Layer, _ inputs: [Tensor]) throws -> [Tensor] {
        let context = try TestGPU.get()
        let shapes = try layer.outputShapes(forInputShapes: inputs.map(\.shape))
        let images = try inputs.map { try context.upload($0.reshaped(to: Tensor.nchwShape($0.shape))) }
        let outputImages = try shapes.map { try context.makeSliceImage(shape: Tensor.nchwShape($0)) }
        let commands = try context.makeCommandBuffer()
        try layer.encode(commandBuffer: commands, inputs: images, outputs: outputImages)
        try commands.commit()
        try commands.waitUntilCompleted()
        for image in outputImages {
            let lanes = try TestGPU.rawLanes(of: image)
            let plane = image.width * image.height
            let used = image.featureChannels - 4 * (image.slices - 1)
            var nonzero = 0
            for texel in 0..<lanes.count / 4 where (texel / plane) % image.slices == image.slices - 1 {
                for lane in used..<4 where lanes[texel * 4 + lane] != 0 { nonzero += 1 }
            }
            #expect(nonzero == 0, "\(layer.layerName): \(nonzero) nonzero padding lanes")
        }
        return try zip(outputImages, shapes).map { try context.download($0.0).reshaped(to: $0.1) }
    }

    /// A seeded tensor uniform in `range`, rounded to fp16 when `half`.
    static func tensor(_ shape: [Int], seed: UInt64, in range: ClosedRange<Float> = -4...4, half: Bool = false) throws -> Tensor {
        let tensor = try Tensor.uniform(shape: shape, in: range, seed: seed)
        return half ? try tensor.roundedToHalf() : tensor
    }

    /// Expects `actual` to match `expected` within `tolerance * max(1, |expected|)`
    /// element by element (NaN matching NaN, infinities matching exactly).
    static func expectClose(_ actual: Tensor, _ expected: [Double], tolerance: Double, _ what: String,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        guard actual.count == expected.count else {
            Issue.record(Comment(rawValue: "\(what): \(actual.count) values, expected \(expected.count)"),
                         sourceLocation: sourceLocation)
            return
        }
        var worst: (index: Int, error: Double)?
        for i in 0..<actual.count {
            let (a, e) = (Double(actual[i]), expected[i])
            let error: Double = if e.isNaN || e.isInfinite {
                (a.isNaN && e.isNaN) || a == e ? 0 : .infinity
            } else {
                abs(a - e) / max(1, abs(e))
            }
            if error > tolerance, error > (worst?.error ?? 0) { worst = (i, error) }
        }
        if let worst {
            let message = "\(what): element \(worst.index) is \(actual[worst.index]), expected \(expected[worst.index]) "
                + "(relative error \(worst.error) > \(tolerance))"
            Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
        }
    }

    /// CPU results agree within 1e-5 relative.
    static let cpuTolerance = 1e-5
    /// GPU results (fp16 storage) agree within 1e-3 relative.
    static let gpuTolerance = 1e-3

    /// Row-major strides of `shape`.
    static func strides(_ shape: [Int]) -> [Int] {
        var strides = Array(repeating: 1, count: shape.count)
        for axis in shape.indices.dropLast().reversed() { strides[axis] = strides[axis + 1] * shape[axis + 1] }
        return strides
    }

    /// The multi-index of row-major element `index` in `shape`.
    static func position(_ index: Int, in shape: [Int]) -> [Int] {
        zip(shape, strides(shape)).map { extent, stride in (index / stride) % extent }
    }
}
