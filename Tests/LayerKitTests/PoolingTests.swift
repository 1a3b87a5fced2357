import Foundation
import Testing
@testable import LayerKit

struct PoolingTests {
    /// A float64 pool over windows gathered cell by cell; the geometry
    /// from `Padding.window` (checked against onnxruntime below).
    static func reference(_ x: Tensor, _ pool: Pooling) throws -> [Double] {
        let (n, c, h, w) = (x.shape[0], x.shape[1], x.shape[2], x.count / (x.shape[0] * x.shape[1] * x.shape[2]))
        let value = { (b: Int, ch: Int, y: Int, xx: Int) in Double(x[((b * c + ch) * h + y) * w + xx]) }
        var result: [Double] = []
        if pool.kind == .globalAverage || pool.kind == .globalMax {
            for b in 0..<n {
                for ch in 0..<c {
                    let cells = (0..<h).flatMap { y in (0..<w).map { value(b, ch, y, $0) } }
                    result.append(pool.kind == .globalMax ? cells.max()! : cells.reduce(0, +) / Double(cells.count))
                }
            }
            return result
        }
        let rows = try pool.padding.window(axis: 0, of: 2, input: h, kernel: pool.kernel[0], stride: pool.strides[0],
                                           dilation: pool.dilations[0], ceilMode: pool.ceilMode, layer: "test")
        let cols = try pool.padding.window(axis: 1, of: 2, input: w, kernel: pool.kernel[1], stride: pool.strides[1],
                                           dilation: pool.dilations[1], ceilMode: pool.ceilMode, layer: "test")
        func cells(_ o: Int, _ axis: Padding.Axis, _ k: Int) -> [Int] {
            (0..<pool.kernel[k]).map { o * pool.strides[k] - axis.begin + $0 * pool.dilations[k] }
        }
        for b in 0..<n {
            for ch in 0..<c {
                for oy in 0..<rows.output {
                    for ox in 0..<cols.output {
                        let ys = cells(oy, rows, 0), xs = cells(ox, cols, 1)
                        let inY = ys.filter { (0..<h).contains($0) }, inX = xs.filter { (0..<w).contains($0) }
                        let values = inY.flatMap { y in inX.map { value(b, ch, y, $0) } }
                        switch pool.kind {
                        case .max:
                            result.append(values.max() ?? -.infinity)
                        case .average(let countIncludePad):
                            let count = countIncludePad
                                ? ys.filter { (-rows.begin..<h + rows.end).contains($0) }.count
                                    * xs.filter { (-cols.begin..<w + cols.end).contains($0) }.count
                                : values.count
                            result.append(count == 0 ? 0 : values.reduce(0, +) / Double(count))
                        default:
                            break
                        }
                    }
                }
            }
        }
        return result
    }

    /// Pools covering max and both averages, strides, explicit and auto
    /// pads, dilation, ceil mode, and the global pools.
    static func pools() throws -> [Pooling] {
        [
            try Pooling(kind: .max, kernel: [3, 3], strides: [2, 2], padding: .explicit([1, 1, 1, 1])),
            try Pooling(kind: .max, kernel: [2, 2], strides: [2, 2], ceilMode: true),
            try Pooling(kind: .max, kernel: [3, 2], strides: [1, 2], dilations: [2, 1], padding: .explicit([1, 0, 2, 1]),
                        ceilMode: true),
            try Pooling(kind: .max, kernel: [2, 2], strides: [2, 2], padding: .sameLower),
            try Pooling(kind: .average(countIncludePad: false), kernel: [3, 3], padding: .explicit([1, 1, 1, 1])),
            try Pooling(kind: .average(countIncludePad: true), kernel: [3, 3], padding: .explicit([1, 1, 1, 1])),
            try Pooling(kind: .average(countIncludePad: false), kernel: [2, 3], strides: [2, 1],
                        padding: .explicit([0, 1, 1, 0]), ceilMode: true),
            try Pooling(kind: .average(countIncludePad: true), kernel: [2, 3], strides: [2, 1],
                        padding: .explicit([0, 1, 1, 0]), ceilMode: true),
            try Pooling(kind: .average(countIncludePad: true), kernel: [3, 3], strides: [2, 2], padding: .sameUpper),
            try Pooling(kind: .average(countIncludePad: false), kernel: [2, 2], strides: [1, 1], dilations: [1, 2],
                        padding: .valid),
            // Column stride 3 (the kernel's general-stride loop) with dilation.
            try Pooling(kind: .max, kernel: [2, 3], strides: [3, 3], dilations: [1, 2], padding: .explicit([1, 2, 0, 1])),
            try Pooling(kind: .average(countIncludePad: false), kernel: [2, 3], strides: [2, 3], dilations: [1, 2],
                        padding: .explicit([1, 2, 0, 1])),
            try Pooling(kind: .globalAverage),
            try Pooling(kind: .globalMax),
        ]
    }

    static let shapes: [[Int]] = [[2, 3, 7, 9], [2, 5, 6, 6], [1, 8, 5, 4], [2, 1, 4, 5], [2, 6, 3, 3]]

    /// On 1x1 images: the pools whose padded window fits one cell.
    static func pools1x1() throws -> [Pooling] {
        [
            try Pooling(kind: .max, kernel: [3, 3], padding: .explicit([1, 1, 1, 1])),
            try Pooling(kind: .average(countIncludePad: true), kernel: [3, 3], padding: .explicit([1, 1, 1, 1])),
            try Pooling(kind: .globalAverage), try Pooling(kind: .globalMax),
        ]
    }

    static func cases() throws -> [(Pooling, [Int])] {
        try pools().flatMap { pool in shapes.map { (pool, $0) } } + pools1x1().map { ($0, [2, 5, 1, 1]) }
    }

    @Test func cpuMatchesTheReference() throws {
        for (k, (pool, shape)) in try Self.cases().enumerated() {
            let x = try OpLayerTest.tensor(shape, seed: UInt64(k))
            OpLayerTest.expectClose(try OpLayerTest.cpu(pool, [x])[0], try Self.reference(x, pool),
                                    tolerance: OpLayerTest.cpuTolerance, "\(pool.layerName) #\(k) \(shape)")
        }
        // Global pools of a rank-3 tensor reduce its last axis.
        let x = try OpLayerTest.tensor([2, 3, 10], seed: 9)
        let average = try OpLayerTest.cpu(Pooling(kind: .globalAverage), [x])[0]
        #expect(average.shape == [2, 3, 1])
        OpLayerTest.expectClose(average, try Self.reference(x.reshaped(to: [2, 3, 10, 1]), Pooling(kind: .globalAverage)),
                                tolerance: OpLayerTest.cpuTolerance, "rank 3")
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func gpuMatchesTheReference() throws {
        for (k, (pool, shape)) in try Self.cases().enumerated() {
            let x = try OpLayerTest.tensor(shape, seed: UInt64(k), half: true)
            OpLayerTest.expectClose(try OpLayerTest.gpu(pool, [x])[0], try Self.reference(x, pool),
                                    tolerance: OpLayerTest.gpuTolerance, "\(pool.layerName) #\(k) \(shape)")
        }
    }

    /// MaxPool and GlobalMaxPool propagate NaN as onnxruntime does (issue
    /// 14, class 9): a window holding a NaN, wherever it sits in the window,
    /// gives NaN; windows without one give their largest value (the
    /// negative control: not everything is NaN). Reference in Double.
    static func nanCase() throws -> (Tensor, [Pooling], [[Double]]) {
        let x = try OpLayerTest.tensor([1, 5, 4, 4], seed: 14, half: true)
        // NaN first, inside and last in a channel's windows, in channels 0, 3 and 4 (a second slice).
        for i in [0, 16 * 3 + 5, 16 * 4 + 15] { x[i] = .nan }
        let pools = [try Pooling(kind: .max, kernel: [2, 2]),
                     try Pooling(kind: .max, kernel: [3, 3], padding: .explicit([1, 1, 1, 1])),
                     try Pooling(kind: .globalMax)]
        let expected = try pools.map { pool -> [Double] in
            // The float64 reference with NaN taken over every cell: rebuild it
            // from windows of a tensor whose NaN cells are +inf, then map the
            // windows that saw +inf back to NaN (inputs here are finite).
            let marked = try Tensor(shape: x.shape, values: x.values.map { $0.isNaN ? .infinity : $0 })
            return try reference(marked, pool).map { $0 == .infinity ? .nan : $0 }
        }
        return (x, pools, expected)
    }

    static func expectSameNaN(_ y: Tensor, _ expected: [Double], tolerance: Double, _ what: String) {
        #expect(y.count == expected.count, "\(what)")
        #expect(expected.contains { $0.isNaN } && expected.contains { !$0.isNaN }, "\(what): a vacuous case")
        for (i, (got, want)) in zip(y.values, expected).enumerated() {
            if want.isNaN {
                #expect(got.isNaN, "\(what) [\(i)]: \(got), expected NaN")
            } else {
                #expect(abs(Double(got) - want) <= tolerance * max(1, abs(want)), "\(what) [\(i)]: \(got) vs \(want)")
            }
        }
    }

    @Test func maxPoolPropagatesNaNOnTheCPU() throws {
        let (x, pools, expected) = try Self.nanCase()
        for (pool, want) in zip(pools, expected) {
            Self.expectSameNaN(try OpLayerTest.cpu(pool, [x])[0], want, tolerance: 1e-6, "CPU \(pool.layerName)")
        }
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func maxPoolPropagatesNaNOnTheGPU() throws {
        let (x, pools, expected) = try Self.nanCase()
        for (pool, want) in zip(pools, expected) {
            Self.expectSameNaN(try OpLayerTest.gpu(pool, [x])[0], want, tolerance: 1e-3, "GPU \(pool.layerName)")
        }
    }

    /// AveragePool along one row of 0, 1, 2, ... as onnxruntime 1.32
    /// computes it: (width, kernel, stride, dilation, pads, ceil, auto_pad,
    /// count_include_pad) -> output. Negative SAME pads, ceil windows past
    /// the padding, and windows reaching past the padded extent.
    static let onnxruntimeRows: [(Int, Int, Int, Int, Padding, Bool, Bool, [Double])] = [
        (6, 1, 3, 1, .sameUpper, false, false, [1, 4]),
        (6, 1, 3, 1, .sameLower, false, false, [0, 3]),
        (7, 3, 2, 1, .sameLower, false, false, [0.5, 2, 4, 5.5]),
        (7, 3, 2, 1, .sameLower, false, true, [1.0 / 3, 2, 4, 11.0 / 3]),
        (2, 2, 2, 1, .explicit([0, 0, 0, 1]), true, false, [0.5]),
        (3, 2, 2, 1, .explicit([0, 1, 0, 1]), true, false, [0, 1.5]),
        (5, 2, 2, 1, .explicit([0, 0, 0, 0]), true, false, [0.5, 2.5, 4]),
        (5, 2, 2, 1, .explicit([0, 0, 0, 0]), true, true, [0.5, 2.5, 4]),
        (5, 2, 2, 1, .explicit([0, 0, 0, 0]), false, false, [0.5, 2.5]),
        (7, 3, 2, 2, .explicit([0, 1, 0, 2]), true, false, [2, 3, 4, 5]),
        (7, 3, 2, 2, .explicit([0, 1, 0, 2]), true, true, [4.0 / 3, 3, 8.0 / 3, 2.5]),
        (6, 3, 2, 1, .valid, true, false, [1, 3, 4.5]),
    ]

    @Test func averagePoolMatchesOnnxruntime() throws {
        for (width, k, s, d, padding, ceil, includePad, expected) in Self.onnxruntimeRows {
            let pool = try Pooling(kind: .average(countIncludePad: includePad), kernel: [1, k], strides: [1, s],
                                   dilations: [1, d], padding: padding, ceilMode: ceil)
            let x = try Tensor(shape: [1, 1, 1, width], values: (0..<width).map(Float.init))
            let what = "width \(width) kernel \(k) stride \(s) dilation \(d) \(padding) ceil \(ceil) includePad \(includePad)"
            OpLayerTest.expectClose(try OpLayerTest.cpu(pool, [x])[0], expected, tolerance: 1e-6, "CPU \(what)")
            if TestGPU.isEnabled {
                OpLayerTest.expectClose(try OpLayerTest.gpu(pool, [x])[0], expected, tolerance: 1e-3, "GPU \(what)")
            }
        }
    }

    @Test func badParametersAndShapesThrow() throws {
        // One value is a 1-D pool; three are GeneralPooling's.
        #expect(throws: LayerKitError.invalidParameter("MaxPool: kernel [3, 3, 3] must be 1 or 2 values (1-D or 2-D pooling)")) {
            try Pooling(kind: .max, kernel: [3, 3, 3])
        }
        #expect(throws: LayerKitError.invalidParameter("MaxPool: strides [2, 2] must be 1 positive value(s)")) {
            try Pooling(kind: .max, kernel: [3], strides: [2, 2])
        }
        #expect(throws: LayerKitError.invalidParameter("AveragePool: strides [0, 1] must be 2 positive value(s)")) {
            try Pooling(kind: .average(countIncludePad: false), kernel: [2, 2], strides: [0, 1])
        }
        #expect(throws: LayerKitError.invalidParameter("MaxPool: pads [1, -1, 0, 0] must be 4 values >= 0 [top, left, bottom, right]")) {
            try Pooling(kind: .max, kernel: [2, 2], padding: .explicit([1, -1, 0, 0]))
        }
        #expect(throws: LayerKitError.invalidParameter("GlobalMaxPool takes no kernel, got [2, 2]")) {
            try Pooling(kind: .globalMax, kernel: [2, 2])
        }
        let pool = try Pooling(kind: .max, kernel: [3, 3])
        #expect(throws: LayerKitError.shapeMismatch(
            "MaxPool: the window (3 cells with dilation) is larger than the padded input (2) on spatial axis 0")) {
            try pool.outputShapes(forInputShapes: [[1, 1, 2, 5]])
        }
        #expect(throws: LayerKitError.shapeMismatch("MaxPool: input of rank 3 (1x4x4), expected rank 4")) {
            try pool.outputShapes(forInputShapes: [[1, 4, 4]])
        }
    }
}
