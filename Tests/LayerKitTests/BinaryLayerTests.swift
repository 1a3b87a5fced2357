import Foundation
import Testing
@testable import LayerKit

struct BinaryLayerTests {
    /// Operand shape pairs: same shapes, per-channel, scalar, batch, width
    /// and height broadcasts, both operands broadcasting, one channel
    /// against many, 1x1 images, ranks 1 to 3; each in both directions.
    static let shapePairs: [([Int], [Int])] = {
        let pairs: [([Int], [Int])] = [
            ([2, 3, 5, 7], [2, 3, 5, 7]), ([2, 5, 3, 3], [1, 5, 1, 1]), ([2, 6, 4, 3], [1, 1, 1, 1]),
            ([2, 3, 4, 5], [1, 3, 4, 5]), ([2, 1, 4, 1], [1, 6, 1, 5]), ([2, 8, 3, 5], [2, 8, 3, 1]),
            ([2, 8, 3, 5], [2, 8, 1, 5]), ([2, 1, 3, 3], [2, 5, 3, 3]), ([2, 3, 1, 1], [2, 3, 1, 1]),
            ([2, 5], [1, 5]), ([3, 1], [1, 8]), ([3, 4, 5], [3, 1, 5]), ([7], [1]),
        ]
        return pairs + pairs.map { ($0.1, $0.0) }
    }()

    /// The float64 result of `a op b` broadcast to `shape`.
    static func reference(_ operation: BinaryLayer.Operation, _ a: Tensor, _ b: Tensor, shape: [Int]) -> [Double] {
        func element(_ t: Tensor, _ position: [Int]) -> Double {
            let strides = OpLayerTest.strides(t.shape)
            return Double(t[zip(position, zip(t.shape, strides)).reduce(0) { $0 + ($1.1.0 == 1 ? 0 : $1.0 * $1.1.1) }])
        }
        let count = shape.reduce(1, *)
        return (0..<count).map { i in
            let position = OpLayerTest.position(i, in: shape)
            let (x, y) = (element(a, position), element(b, position))
            return Self.reference(operation, x, y)
        }
    }

    /// `x op y` in float64, written out independently of the layer.
    static func reference(_ operation: BinaryLayer.Operation, _ x: Double, _ y: Double) -> Double {
        func truth(_ c: Bool) -> Double { c ? 1 : 0 }
        switch operation {
        case .add: return x + y
        case .sub: return x - y
        case .mul: return x * y
        case .div: return x / y
        case .pow: return Foundation.pow(x, y)
        case .max: return x.isNaN || y.isNaN ? .nan : Swift.max(x, y)
        case .min: return x.isNaN || y.isNaN ? .nan : Swift.min(x, y)
        case .fmod: return Foundation.fmod(x, y)
        case .mod:
            let r = Foundation.fmod(x, y)
            return r != 0 && (r < 0) != (y < 0) ? r + y : r
        case .equal: return truth(x == y)
        case .less: return truth(x < y)
        case .greater: return truth(x > y)
        case .lessOrEqual: return truth(x <= y)
        case .greaterOrEqual: return truth(x >= y)
        case .and: return truth(x != 0 && y != 0)
        case .or: return truth(x != 0 || y != 0)
        case .xor: return truth((x != 0) != (y != 0))
        case .prelu: return x >= 0 ? x : x * y
        }
    }

    static func broadcast(_ a: [Int], _ b: [Int]) -> [Int] { zip(a, b).map { max($0, $1) } }

    @Test(arguments: BinaryLayer.Operation.allCases)
    func cpuMatchesTheReferenceForEveryBroadcast(operation: BinaryLayer.Operation) throws {
        let layer = BinaryLayer(operation)
        for (k, (shapeA, shapeB)) in (Self.shapePairs + [([2, 1, 3, 1, 4], [1, 2, 1, 5, 1])]).enumerated() {
            let a = try OpLayerTest.tensor(shapeA, seed: UInt64(2 * k))
            let b = try OpLayerTest.tensor(shapeB, seed: UInt64(2 * k + 1), in: 0.5...4)
            let shape = Self.broadcast(shapeA, shapeB)
            #expect(try layer.outputShapes(forInputShapes: [shapeA, shapeB]) == [shape])
            let output = try OpLayerTest.cpu(layer, [a, b])[0]
            OpLayerTest.expectClose(output, Self.reference(operation, a, b, shape: shape), tolerance: OpLayerTest.cpuTolerance,
                                    "\(layer.layerName) \(shapeA) \(shapeB)")
        }
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: BinaryLayer.Operation.allCases)
    func gpuMatchesTheReferenceForEveryBroadcast(operation: BinaryLayer.Operation) throws {
        let layer = BinaryLayer(operation)
        for (k, (shapeA, shapeB)) in Self.shapePairs.enumerated() {
            let a = try OpLayerTest.tensor(shapeA, seed: UInt64(2 * k), half: true)
            let b = try OpLayerTest.tensor(shapeB, seed: UInt64(2 * k + 1), in: 0.5...4, half: true)
            let output = try OpLayerTest.gpu(layer, [a, b])[0]
            let expected = Self.reference(operation, a, b, shape: Self.broadcast(shapeA, shapeB))
            OpLayerTest.expectClose(output, expected, tolerance: OpLayerTest.gpuTolerance, "\(layer.layerName) \(shapeA) \(shapeB)")
        }
    }

    /// x / ±0 is ±inf, 0 / 0 and NaN / 0 are NaN, on both backends.
    @Test func divisionByZeroFollowsIEEE() throws {
        let a = try Tensor(shape: [1, 6], values: [1, -1, 0, .nan, 2, -3])
        let b = try Tensor(shape: [1, 6], values: [0, 0, 0, 0, -0.0, -0.0])
        let expected: [Double] = [.infinity, -.infinity, .nan, .nan, -.infinity, .infinity]
        let layer = BinaryLayer(.div)
        OpLayerTest.expectClose(try OpLayerTest.cpu(layer, [a, b])[0], expected, tolerance: 0, "CPU")
        if TestGPU.isEnabled {
            OpLayerTest.expectClose(try OpLayerTest.gpu(layer, [a, b])[0], expected, tolerance: 0, "GPU")
        }
    }

    /// Same shapes make one run; per-channel and scalar operands long runs
    /// with stride 0: the fast vector paths.
    @Test func commonCasesBecomeLongRuns() throws {
        let same = try BroadcastPlan([2, 3, 4, 5], [2, 3, 4, 5], layer: "Add")
        #expect(same.run == 120 && same.runStrideA == 1 && same.runStrideB == 1)
        let channel = try BroadcastPlan([2, 5, 3, 4], [1, 5, 1, 1], layer: "Add")
        #expect(channel.run == 12 && channel.runStrideB == 0)
        let scalar = try BroadcastPlan([1, 1, 1, 1], [2, 6, 4, 3], layer: "Add")
        #expect(scalar.run == 144 && scalar.runStrideA == 0 && scalar.runStrideB == 1)
    }

    @Test func mismatchedShapesThrow() throws {
        let layer = BinaryLayer(.add)
        #expect(throws: LayerKitError.shapeMismatch(
            "Add: inputs 2x3 and 2x4 do not broadcast (extents must be equal or 1, counted from the last axis)")) {
            try layer.outputShapes(forInputShapes: [[2, 3], [2, 4]])
        }
        // Lower ranks are padded with leading 1s (numpy's rule).
        #expect(try layer.outputShapes(forInputShapes: [[2, 3], [3]]) == [[2, 3]])
        #expect(try layer.outputShapes(forInputShapes: [[4, 1, 3], [2, 1]]) == [[4, 2, 3]])
        #expect(throws: LayerKitError.shapeMismatch("Add takes 2 inputs, got 1")) {
            try layer.outputShapes(forInputShapes: [[2, 3]])
        }
        let a = try Tensor(shape: [2, 3]), b = try Tensor(shape: [1, 3])
        #expect(throws: LayerKitError.self) { try layer.evaluate(inputs: [a, b], outputs: [try Tensor(shape: [1, 3])]) }
    }
}
