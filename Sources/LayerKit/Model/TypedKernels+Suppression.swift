import Foundation
import LayerKitONNX

/// NonMaxSuppression, as onnxruntime computes it (in Float, its one type).
extension TypedKernels {
    /// NonMaxSuppression-10/11: per batch and class, the boxes scoring
    /// above `score_threshold` (when given) taken best first (ties: the
    /// lower box index first), each kept unless its IoU with a box kept
    /// before it exceeds `iou_threshold`, at most
    /// `max_output_boxes_per_class` (default 0: none) of them; boxes as
    /// corners [y1, x1, y2, x2] in either order or, with
    /// `center_point_box`, [x_center, y_center, width, height]. Gives
    /// [selected, 3] int64 rows (batch, class, box) in that order. A NaN
    /// score is never selected.
    static func nonMaxSuppression(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["center_point_box"])
        let boxes = try input(0, inputs, node), scores = try input(1, inputs, node)
        guard boxes.elementType.isFloatingPoint, scores.elementType.isFloatingPoint, boxes.shape.count == 3, boxes.shape[2] == 4,
              scores.shape.count == 3, scores.shape[0] == boxes.shape[0], scores.shape[2] == boxes.shape[1] else {
            throw node.error("boxes must be [batches, boxes, 4] and scores [batches, classes, boxes] of floats, "
                             + "got \(boxes) and \(scores)")
        }
        let centered = try node.int("center_point_box", default: 0)
        guard centered == 0 || centered == 1 else { throw node.error("center_point_box \(centered) is not 0 or 1") }
        let limit = try optional(2, inputs).map { try scalarInteger($0, "max_output_boxes_per_class", node) } ?? 0
        let iou = try optional(3, inputs).map { try scalarFloat($0, "iou_threshold", node) } ?? 0
        let least = try optional(4, inputs).map { try scalarFloat($0, "score_threshold", node) }
        guard (0...1).contains(iou) else { throw node.error("iou_threshold \(iou) must be in [0, 1]") }
        let (batches, classes, count) = (scores.shape[0], scores.shape[1], boxes.shape[1])
        let corners = boxes.doubles().map { Float($0) }, values = scores.doubles().map { Float($0) }
        let rects = (0..<(batches * count)).map { SuppressionBox(corners[(4 * $0)..<(4 * $0 + 4)], centered: centered == 1) }
        var rows: [Int64] = []
        for batch in 0..<batches {
            for c in 0..<classes {
                let base = (batch * classes + c) * count
                let score = { (box: Int) -> Float in values[base + box] }
                var candidates = (0..<count).filter { box in !score(box).isNaN && least.map { score(box) > $0 } ?? true }
                candidates.sort { a, b in score(a) > score(b) || (score(a) == score(b) && a < b) }
                var kept: [Int] = []
                for box in candidates where Int64(kept.count) < limit {
                    let rect = rects[batch * count + box]
                    guard !kept.contains(where: { rects[batch * count + $0].overlaps(rect, beyond: iou) }) else { continue }
                    kept.append(box)
                    rows += [Int64(batch), Int64(c), Int64(box)]
                }
            }
        }
        return [try TypedTensor(.int64, shape: [rows.count / 3, 3], integers: rows)]
    }

    /// A scalar (or one-element) float input.
    static func scalarFloat(_ tensor: TypedTensor, _ what: String, _ node: ONNXNodeContext) throws -> Float {
        guard tensor.count == 1, tensor.elementType.isFloatingPoint else {
            throw node.error("\(what) must be a float scalar, got \(tensor)")
        }
        return Float(tensor.double(at: 0))
    }
}

/// One NonMaxSuppression box as its extents on each axis.
private struct SuppressionBox {
    let xMin, xMax, yMin, yMax: Float

    init(_ v: ArraySlice<Float>, centered: Bool) {
        let v = Array(v)
        if centered {
            (xMin, xMax) = (v[0] - v[2] / 2, v[0] + v[2] / 2)
            (yMin, yMax) = (v[1] - v[3] / 2, v[1] + v[3] / 2)
        } else {
            (xMin, xMax) = (min(v[1], v[3]), max(v[1], v[3]))
            (yMin, yMax) = (min(v[0], v[2]), max(v[0], v[2]))
        }
    }

    var area: Float { (xMax - xMin) * (yMax - yMin) }

    /// Whether the two boxes' intersection over union exceeds `threshold`
    /// (never for boxes without area, as onnxruntime).
    func overlaps(_ other: SuppressionBox, beyond threshold: Float) -> Bool {
        let (left, right) = (max(xMin, other.xMin), min(xMax, other.xMax))
        let (top, bottom) = (max(yMin, other.yMin), min(yMax, other.yMax))
        guard right > left, bottom > top else { return false }
        let intersection = (right - left) * (bottom - top), union = area + other.area - intersection
        guard intersection > 0, area > 0, other.area > 0, union > 0 else { return false }
        return intersection / union > threshold
    }
}
