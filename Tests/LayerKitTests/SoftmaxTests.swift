import Foundation
import Testing
@testable import LayerKit

struct SoftmaxTests {
    /// exp(x - max) / sum(exp(x - max)) along `axis`, in float64.
    static func reference(_ x: Tensor, axis: Int) -> [Double] {
        let inner = x.shape[(axis + 1)...].reduce(1, *), length = x.shape[axis]
        return (0..<x.count).map { i in
            let base = i - ((i / inner) % length) * inner
            let slice = (0..<length).map { Double(x[base + $0 * inner]) }
            let m = slice.max()!
            return exp(Double(x[i]) - m) / slice.map { exp($0 - m) }.reduce(0, +)
        }
    }

    /// Channel-axis softmaxes (the GPU's): rank 2 N x M, rank 3 and 4,
    /// channels 1, 3, 5, 6, 8, 1x1 images.
    static let channelShapes: [[Int]] = [[2, 5], [3, 1000], [2, 3, 4, 5], [2, 6, 3, 3], [2, 1, 3, 2], [1, 8, 2, 7],
                                         [2, 5, 1, 1], [2, 3, 7]]

    @Test func cpuMatchesTheReferenceAlongEveryAxis() throws {
        for (k, shape) in (Self.channelShapes + [[7], [2, 3, 2, 2, 3]]).enumerated() {
            let x = try OpLayerTest.tensor(shape, seed: UInt64(k), in: -20...20)
            for axis in shape.indices {
                OpLayerTest.expectClose(try OpLayerTest.cpu(Softmax(axis: axis), [x])[0], Self.reference(x, axis: axis),
                                        tolerance: OpLayerTest.cpuTolerance, "\(shape) axis \(axis)")
            }
        }
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func gpuMatchesTheReferenceAlongTheChannelAxis() throws {
        let layer = try Softmax(axis: 1)
        #expect(layer.hasGPUImplementation)
        for (k, shape) in Self.channelShapes.enumerated() {
            let x = try OpLayerTest.tensor(shape, seed: UInt64(k), in: -20...20, half: true)
            OpLayerTest.expectClose(try OpLayerTest.gpu(layer, [x])[0], Self.reference(x, axis: 1),
                                    tolerance: OpLayerTest.gpuTolerance, "\(shape)")
        }
    }

    /// log(softmax) in float64, and Hardmax: 1 at the first largest value.
    static func reference(_ x: Tensor, axis: Int, kind: Softmax.Kind) -> [Double] {
        let inner = x.shape[(axis + 1)...].reduce(1, *), length = x.shape[axis]
        switch kind {
        case .softmax: return reference(x, axis: axis)
        case .logSoftmax: return reference(x, axis: axis).map { log($0) }
        case .hardmax:
            return (0..<x.count).map { i in
                let position = (i / inner) % length, base = i - position * inner
                let slice = (0..<length).map { x[base + $0 * inner] }
                return slice.firstIndex(of: slice.max()!) == position ? 1 : 0
            }
        }
    }

    @Test func logSoftmaxAndHardmaxAlongEveryAxisOnTheCPU() throws {
        for (k, shape) in (Self.channelShapes + [[7], [2, 3, 2, 2, 3]]).enumerated() {
            let x = try OpLayerTest.tensor(shape, seed: UInt64(k), in: -20...20)
            for axis in shape.indices {
                for kind in [Softmax.Kind.logSoftmax, .hardmax] {
                    OpLayerTest.expectClose(try OpLayerTest.cpu(Softmax(axis: axis, kind: kind), [x])[0],
                                            Self.reference(x, axis: axis, kind: kind),
                                            tolerance: OpLayerTest.cpuTolerance, "\(kind) \(shape) axis \(axis)")
                }
            }
        }
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func logSoftmaxAndHardmaxOnTheGPUAlongTheChannelAxis() throws {
        for kind in [Softmax.Kind.logSoftmax, .hardmax] {
            let layer = try Softmax(axis: 1, kind: kind)
            for (k, shape) in Self.channelShapes.enumerated() {
                let x = try OpLayerTest.tensor(shape, seed: UInt64(k), in: -20...20, half: true)
                OpLayerTest.expectClose(try OpLayerTest.gpu(layer, [x])[0], Self.reference(x, axis: 1, kind: kind),
                                        tolerance: OpLayerTest.gpuTolerance, "\(kind) \(shape)")
            }
        }
    }

    /// Before opset 13: the axes from `axis` on, flattened, are one softmax.
    @Test func flattenedTrailingAxesAreOneSoftmax() throws {
        let x = try OpLayerTest.tensor([2, 3, 2, 2], seed: 9, in: -5...5)
        let flat = try x.reshaped(to: [2, 12])
        let y = try OpLayerTest.cpu(Softmax(axis: 1, flattensTrailingAxes: true), [x])[0]
        OpLayerTest.expectClose(y, Self.reference(flat, axis: 1), tolerance: OpLayerTest.cpuTolerance, "flattened")
    }

    /// Large values do not overflow: the maximum is subtracted first.
    @Test func largeValuesStayFinite() throws {
        let x = try Tensor(shape: [1, 3], values: [1000, 1000, -1000])
        let y = try OpLayerTest.cpu(Softmax(axis: 1), [x])[0]
        OpLayerTest.expectClose(y, [0.5, 0.5, 0], tolerance: 1e-7, "CPU")
    }

    /// The GPU walks the channels, H or W; the batch axis and flattened axes stay on the CPU.
    @Test func theBatchAxisAndFlattenedAxesStayOnTheCPUAndBadAxesThrow() throws {
        #expect(try Softmax(axis: 0).whyNotGPU(inputShapes: [[2, 5]], outputShapes: [[2, 5]])
                == "it runs along axis 0, the batch axis, which the GPU form does not walk")
        for axis in 1...3 {
            #expect(try Softmax(axis: axis).whyNotGPU(inputShapes: [[1, 2, 3, 4]], outputShapes: [[1, 2, 3, 4]]) == nil)
        }
        #expect(try Softmax(axis: 1, flattensTrailingAxes: true).whyNotGPU(inputShapes: [[2, 3, 4]], outputShapes: [[2, 3, 4]])
                == "it runs over axes 1 to 2 flattened (ONNX before opset 13), not one axis of the image")
        #expect(try Softmax(axis: 1, flattensTrailingAxes: true).whyNotGPU(inputShapes: [[2, 5]], outputShapes: [[2, 5]])
                == nil)
        #expect(throws: LayerKitError.invalidParameter(
            "Softmax: axis -1 must be >= 0 (resolve negative axes against the rank)")) { try Softmax(axis: -1) }
        #expect(throws: LayerKitError.shapeMismatch("Softmax: axis 2 is past the last axis of 2x5")) {
            try Softmax(axis: 2).outputShapes(forInputShapes: [[2, 5]])
        }
    }
}
