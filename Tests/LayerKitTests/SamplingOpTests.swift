import Foundation
import Testing
@testable import LayerKitONNX
@testable import LayerKit

/// GridSample and AffineGrid beyond the onnx node tests and the
/// onnxruntime cases (Fixtures/onnx-cases/sampling): grids worked out by
/// hand, and hostile attributes, grids and sizes as errors naming the node.
@Suite struct SamplingOpTests {
    static func run(_ op: String, _ inputs: [TypedTensor], opset: Int = 20, _ attributes: [String: ONNXAttribute] = [:])
        throws -> TypedTensor {
        try TypedIndexingKernelTests.run(op, inputs, opset: opset, attributes)[0]
    }

    static func failure(_ op: String, _ inputs: [TypedTensor], opset: Int = 20, _ attributes: [String: ONNXAttribute] = [:])
        -> String {
        TypedIndexingKernelTests.failure(op, inputs, opset: opset, attributes) ?? "no error"
    }

    /// X [1, 1, 2, 2] = [[1, 2], [3, 4]].
    static let x = try! TypedIndexingKernelTests.float([1, 1, 2, 2], [1, 2, 3, 4])

    @Test func cornersCentersAndPadding() throws {
        // align_corners: -1 and 1 are the corner pixels' centers; (x, y) = (1, -1) is the top right, 2.
        let corners = try TypedIndexingKernelTests.float([1, 1, 2, 2], [-1, -1, 1, -1])
        #expect(try Self.run("GridSample", [Self.x, corners], ["align_corners": .int(1)]).doubles() == [1, 2])
        // The center (0, 0) is the mean of the four, in every mode but nearest.
        let center = try TypedIndexingKernelTests.float([1, 1, 1, 2], [0, 0])
        #expect(try Self.run("GridSample", [Self.x, center]).doubles() == [2.5])
        // Past the right edge by half a pixel (x = 2 without align_corners is 1.5 pixels right of the last center):
        // zeros padding blends with 0, border padding repeats the edge.
        let outside = try TypedIndexingKernelTests.float([1, 1, 1, 2], [2, -0.5])
        #expect(try Self.run("GridSample", [Self.x, outside]).doubles() == [0])
        #expect(try Self.run("GridSample", [Self.x, outside], ["padding_mode": .string("border")]).doubles() == [2])
        // Reflection: 2.5 off the border at 1.5 lands at 0.5, between the two pixels.
        #expect(try Self.run("GridSample", [Self.x, outside], ["padding_mode": .string("reflection")]).doubles() == [1.5])
    }

    @Test func affineGridOfTheIdentityIsTheBaseGrid() throws {
        let identity = try TypedIndexingKernelTests.float([1, 2, 3], [1, 0, 0, 0, 1, 0])
        let size = try TypedIndexingKernelTests.int64([4], [1, 1, 2, 3])
        let aligned = try Self.run("AffineGrid", [identity, size], ["align_corners": .int(1)])
        #expect(aligned.shape == [1, 2, 3, 2] && aligned.doubles() == [-1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1])
        // Without align_corners, the pixel centers: x in (-2/3, 0, 2/3), y in (-1/2, 1/2).
        let centers = try Self.run("AffineGrid", [identity, size]).doubles()
        let expected = [-2.0 / 3, -0.5, 0, -0.5, 2.0 / 3, -0.5, -2.0 / 3, 0.5, 0, 0.5, 2.0 / 3, 0.5]
        #expect(zip(centers, expected).allSatisfy { abs($0 - $1) < 1e-6 }, "\(centers)")
    }

    @Test func hostileInputsAreErrorsNamingTheNode() throws {
        let grid = try TypedIndexingKernelTests.float([1, 1, 1, 2], [0, 0])
        let theta = try TypedIndexingKernelTests.float([1, 2, 3], [1, 0, 0, 0, 1, 0])
        let cases: [(String, String)] = [
            (Self.failure("GridSample", [Self.x, grid], ["mode": .string("bilinear")]),
             "node 'n' (GridSample): mode 'bilinear' is not cubic, linear, nearest (opset 20)"),
            (Self.failure("GridSample", [Self.x, grid], opset: 16, ["mode": .string("linear")]),
             "mode 'linear' is not bicubic, bilinear, nearest (opset 16)"),
            (Self.failure("GridSample", [Self.x, grid], ["padding_mode": .string("wrap")]),
             "padding_mode 'wrap' is not zeros, border or reflection"),
            (Self.failure("GridSample", [Self.x, try TypedIndexingKernelTests.float([1, 1, 1, 3], [0, 0, 0])]),
             "grid 1x1x1x3 must be [1, output extents..., 2] for X 1x1x2x2"),
            (Self.failure("GridSample", try [TypedIndexingKernelTests.float([1, 1, 1, 1, 1], [0]),
                                         TypedIndexingKernelTests.float([1, 1, 1, 1, 3], [0, 0, 0])], opset: 16),
             "X must be [N, C, H, W] (before opset 20), got 1x1x1x1x1"),
            (Self.failure("GridSample", [Self.x, try TypedIndexingKernelTests.float([1, 1, 1, 2], [.nan, 0])]),
             "node 'n' (GridSample): GridSample: the grid holds nan; coordinates must be finite"),
            (Self.failure("AffineGrid", [theta, try TypedIndexingKernelTests.int64([4], [1, 1, -2, 3])]),
             "node 'n' (AffineGrid): size must be [N, C, H, W] or [N, C, D, H, W] of extents >= 0, got [1, 1, -2, 3]"),
            (Self.failure("AffineGrid", [theta, try TypedIndexingKernelTests.int64([5], [1, 1, 2, 2, 2])]),
             "theta 1x2x3 must be [1, 3, 4] for size [1, 1, 2, 2, 2]"),
            (Self.failure("AffineGrid", [theta, try TypedIndexingKernelTests.int64([4], [1, 1, 1 << 20, 1 << 20])]),
             "node 'n' (AffineGrid): shape [1, 1048576, 1048576, 2] would hold more than"),
        ]
        for (error, expected) in cases {
            #expect(error.contains(expected), "\(error)")
        }
    }
}
