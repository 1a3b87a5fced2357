import Foundation
import Testing
@testable import LayerKitONNX
@testable import LayerKit

/// NonMaxSuppression, RoiAlign and DeformConv beyond the onnx node tests
/// and the onnxruntime cases (Fixtures/onnx-cases/detection): selections
/// worked out by hand, and hostile limits, regions and offsets as errors
/// naming the node or as bounded work.
@Suite struct DetectionOpTests {
    typealias T = TypedIndexingKernelTests

    /// Three unit boxes: the first two overlap by half (IoU 1/3), the third apart.
    static let boxes = try! T.float([1, 3, 4], [0, 0, 1, 1, 0, 0.5, 1, 1.5, 5, 5, 6, 6])

    @Test func suppressionKeepsTheBestAndSkipsNaN() throws {
        let scores = try T.float([1, 1, 3], [0.5, 0.9, .nan])
        // A limit past every box (Int64.max) selects what there is; IoU 1/3 > 0.3 suppresses box 0; NaN never selected.
        let rows = try T.run("NonMaxSuppression", [Self.boxes, scores, try T.int64([1], [.max]), try T.float([1], [0.3])],
                             opset: 11)[0]
        #expect(rows.shape == [1, 3] && rows.integers() == [0, 0, 1])
        // At an IoU threshold of 0.5 both overlapping boxes stay, best first.
        let both = try T.run("NonMaxSuppression", [Self.boxes, scores, try T.int64([1], [10]), try T.float([1], [0.5])],
                             opset: 11)[0]
        #expect(both.integers() == [0, 0, 1, 0, 0, 0])
    }

    @Test func hostileInputsAreErrorsNamingTheNode() throws {
        let x = try T.float([1, 1, 2, 2], [1, 2, 3, 4])
        let roi = { (values: [Double]) in try T.float([1, 4], values) }
        let zero = try T.int64([1], [0])
        let cases: [(String?, String)] = [
            (T.failure("NonMaxSuppression", [Self.boxes, try T.float([1, 1, 3], [1, 1, 1]), zero, try T.float([1], [1.5])],
                       opset: 11), "node 'n' (NonMaxSuppression): iou_threshold 1.5 must be in [0, 1]"),
            (T.failure("NonMaxSuppression", [Self.boxes, try T.float([1, 1, 2], [1, 1])], opset: 11),
             "boxes must be [batches, boxes, 4] and scores [batches, classes, boxes]"),
            (T.failure("RoiAlign", [x, try roi([0, 0, 1, 1]), try T.int64([1], [3])], opset: 16),
             "batch_indices[0] 3 is outside the 1 images of X"),
            (T.failure("RoiAlign", [x, try roi([0, .nan, 1, 1]), zero], opset: 16), "coordinates must be finite"),
            (T.failure("RoiAlign", [x, try roi([0, 0, 1e12, 1e12]), zero], opset: 16),
             "bilinear samples (sampling_ratio 0), LayerKit's limit"),
            (T.failure("RoiAlign", [x, try roi([0, 0, 1, 1]), zero], opset: 16, ["output_height": .int(-1)]),
             "output_height -1 and output_width 1 must be 1 to"),
            (T.failure("RoiAlign", [x, try roi([0, 0, 1, 1]), zero], opset: 16, ["mode": .string("sum")]),
             "and mode 'sum' must be"),
            (T.failure("DeformConv", [x, try T.float([1, 1, 1, 1], [1]), try T.float([1, 2, 2, 1], [0, 0, 0, 0])], opset: 19),
             "offset 1x2x2x1 must be [1, 2, 2, 2]"),
            (T.failure("DeformConv", [try T.float([1, 1, 2], [1, 2]), try T.float([1, 1, 1], [1]), try T.float([1, 2, 2], [0, 0, 0, 0])],
                       opset: 19), "(LayerKit's DeformConv is 2-D)"),
        ]
        for (error, expected) in cases {
            #expect(error?.contains(expected) == true, "\(error ?? "no error")")
        }
    }

    @Test func regionsAndOffsetsOutsideTheImageReadZero() throws {
        // A region far outside the image: every sample reads zero.
        let x = try T.float([1, 1, 2, 2], [1, 2, 3, 4])
        let far = try T.run("RoiAlign", [x, try T.float([1, 4], [100, 100, 101, 101]), try T.int64([1], [0])], opset: 16)[0]
        #expect(far.doubles() == [0])
        // Offsets of NaN or far outside read zero: the output is the bias alone.
        let offsets = try T.float([1, 2, 2, 2], [.nan, 1e9, -1e9, 0, 0, 0, .infinity, 0])
        let out = try T.run("DeformConv", [x, try T.float([1, 1, 1, 1], [2]), offsets, try T.float([1], [0.5])], opset: 19)[0]
        #expect(out.doubles() == [0.5, 0.5, 0.5, 0.5 + 2 * 4], "\(out.doubles())")
    }
}
