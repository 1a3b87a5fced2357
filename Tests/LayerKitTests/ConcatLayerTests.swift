import Foundation
import Testing
@testable import LayerKit

struct ConcatLayerTests {
    /// The inputs joined along `axis`, element by element.
    static func reference(_ inputs: [Tensor], axis: Int) -> [Double] {
        var shape = inputs[0].shape
        shape[axis] = inputs.map { $0.shape[axis] }.reduce(0, +)
        return (0..<shape.reduce(1, *)).map { i in
            var position = OpLayerTest.position(i, in: shape)
            var k = 0
            while position[axis] >= inputs[k].shape[axis] {
                position[axis] -= inputs[k].shape[axis]
                k += 1
            }
            let index = zip(position, OpLayerTest.strides(inputs[k].shape)).map(*).reduce(0, +)
            return Double(inputs[k][index])
        }
    }

    /// Channel-axis concatenations: 6+5+3, offsets not multiples of 4,
    /// one-channel inputs, more inputs than one dispatch takes, rank 2, 1x1 images.
    static let channelCases: [[[Int]]] = [
        [[2, 6, 3, 5], [2, 5, 3, 5], [2, 3, 3, 5]],
        [[2, 1, 4, 3], [2, 1, 4, 3], [2, 3, 4, 3]],
        [[2, 8, 2, 2], [2, 8, 2, 2]],
        [[2, 3, 1, 1], [2, 5, 1, 1], [2, 1, 1, 1], [2, 6, 1, 1], [2, 2, 1, 1], [2, 3, 1, 1]],
        [[1, 5, 3, 3], [1, 3, 3, 3], [1, 1, 3, 3], [1, 6, 3, 3], [1, 4, 3, 3], [1, 2, 3, 3], [1, 7, 3, 3],
         [1, 3, 3, 3], [1, 1, 3, 3]],
        [[2, 5], [2, 3], [2, 6]],
        [[2, 3, 7]],
    ]

    @Test func cpuMatchesTheReferenceAlongEveryAxis() throws {
        for (k, shapes) in Self.channelCases.enumerated() {
            let inputs = try shapes.enumerated().map { try OpLayerTest.tensor($0.element, seed: UInt64(10 * k + $0.offset)) }
            let y = try OpLayerTest.cpu(ConcatLayer(axis: 1), inputs)[0]
            OpLayerTest.expectClose(y, Self.reference(inputs, axis: 1), tolerance: 0, "\(shapes)")
        }
        for axis in 0..<4 {
            let shapes = [2, 3, 1].map { extent -> [Int] in
                var shape = [2, 3, 4, 5]
                shape[axis] = extent
                return shape
            }
            let inputs = try shapes.enumerated().map { try OpLayerTest.tensor($0.element, seed: UInt64($0.offset)) }
            OpLayerTest.expectClose(try OpLayerTest.cpu(ConcatLayer(axis: axis), inputs)[0],
                                    Self.reference(inputs, axis: axis), tolerance: 0, "axis \(axis)")
        }
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func gpuMatchesTheReferenceAlongTheChannelAxis() throws {
        for (k, shapes) in Self.channelCases.enumerated() {
            let inputs = try shapes.enumerated().map {
                try OpLayerTest.tensor($0.element, seed: UInt64(10 * k + $0.offset), half: true)
            }
            let y = try OpLayerTest.gpu(ConcatLayer(axis: 1), inputs)[0]
            OpLayerTest.expectClose(y, Self.reference(inputs, axis: 1), tolerance: 0, "\(shapes)")
        }
    }

    @Test func mismatchedShapesThrow() throws {
        let layer = try ConcatLayer(axis: 1)
        #expect(!(try ConcatLayer(axis: 2)).hasGPUImplementation)
        #expect(throws: LayerKitError.shapeMismatch("Concat: input 2x3x4 does not match 2x3x5 except along axis 1")) {
            try layer.outputShapes(forInputShapes: [[2, 3, 5], [2, 3, 4]])
        }
        #expect(throws: LayerKitError.shapeMismatch("Concat: input 2x3 does not match 2x3x5 except along axis 1")) {
            try layer.outputShapes(forInputShapes: [[2, 3, 5], [2, 3]])
        }
        #expect(throws: LayerKitError.shapeMismatch("Concat takes at least one input")) {
            try layer.outputShapes(forInputShapes: [])
        }
        #expect(throws: LayerKitError.shapeMismatch("Concat: axis 1 is past the last axis of 4")) {
            try layer.outputShapes(forInputShapes: [[4]])
        }
    }
}
