import Foundation
import LayerKitONNX

/// RoiAlign, as onnxruntime computes it: each region of interest divided
/// into output_height x output_width bins, each bin the average (or
/// maximum) of bilinear samples on a regular grid in it. Float types in
/// Double, rounded to X's type.
extension TypedKernels {
    /// The most bilinear samples one RoiAlign node may take (all regions,
    /// bins and channels): a region of huge extent with `sampling_ratio`
    /// 0 asks for a grid as fine as its extent in pixels.
    static let maxRoiAlignSamples = 1 << 32

    /// RoiAlign-10, 16 (`coordinate_transformation_mode`: "half_pixel",
    /// the new default, shifts the regions by half a pixel and lets them be
    /// smaller than one; "output_half_pixel", opset 10's rule, does not) and
    /// 22 (types): X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2, in the
    /// input's pixels times `spatial_scale`), batch_indices [R], giving
    /// [R, C, output_height, output_width]. A sample more than one pixel
    /// outside the image reads zero.
    static func roiAlign(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["coordinate_transformation_mode", "mode", "output_height", "output_width", "sampling_ratio",
                                    "spatial_scale"])
        let x = try input(0, inputs, node), rois = try input(1, inputs, node), batches = try input(2, inputs, node)
        guard x.elementType.isFloatingPoint, x.shape.count == 4, rois.shape.count == 2, rois.shape[1] == 4,
              batches.elementType.isInteger, batches.shape == [rois.shape[0]] else {
            throw node.error("X must be float [N, C, H, W], rois [R, 4] and batch_indices [R] integers; got \(x), \(rois) "
                             + "and \(batches)")
        }
        let grid = try RoiGrid(node)
        let (n, channels, height, width) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3])
        guard rois.shape[0] == 0 || (height > 0 && width > 0) else { throw node.error("X \(x) has no pixels to sample") }
        let shape = [rois.shape[0], channels, grid.outputHeight, grid.outputWidth]
        var out = [Double](repeating: 0, count: try ONNXFolding.checkedCount(shape, node))
        let values = x.doubles(), corners = rois.doubles(), indices = batches.integers()
        let plane = grid.outputHeight * grid.outputWidth
        var budget = maxRoiAlignSamples
        for r in 0..<rois.shape[0] {
            guard (0..<Int64(n)).contains(indices[r]) else {
                throw node.error("batch_indices[\(r)] \(indices[r]) is outside the \(n) images of X")
            }
            let bins = try grid.bins(Array(corners[(4 * r)..<(4 * r + 4)]), height: height, width: width, budget: &budget,
                                     channels: channels, node)
            for c in 0..<channels {
                let base = (Int(indices[r]) * channels + c) * height * width
                for (b, samples) in bins.enumerated() {
                    let reads = samples.map { taps in taps.reduce(into: [Double]()) { $0.append($1.weight * values[base + $1.offset]) } }
                    out[(r * channels + c) * plane + b] = grid.pools(reads)
                }
            }
        }
        return [try TypedTensor(x.elementType, shape: shape, doubles: out)]
    }
}

/// RoiAlign's attributes: the bins of a region and the samples in each.
private struct RoiGrid {
    let outputHeight: Int
    let outputWidth: Int
    let samplingRatio: Int
    let scale: Double
    let halfPixel: Bool
    let maximum: Bool

    init(_ node: ONNXNodeContext) throws {
        outputHeight = try node.int("output_height", default: 1)
        outputWidth = try node.int("output_width", default: 1)
        samplingRatio = try node.int("sampling_ratio", default: 0)
        scale = Double(try node.float("spatial_scale", default: 1))
        let transform = node.opset >= 16 ? try node.string("coordinate_transformation_mode", default: "half_pixel")
            : "output_half_pixel"
        let mode = try node.string("mode", default: "avg")
        guard ["half_pixel", "output_half_pixel"].contains(transform), ["avg", "max"].contains(mode) else {
            throw node.error("coordinate_transformation_mode '\(transform)' and mode '\(mode)' must be half_pixel or "
                             + "output_half_pixel, and avg or max")
        }
        guard outputHeight >= 1, outputWidth >= 1, samplingRatio >= 0, scale.isFinite,
              outputHeight <= ONNXNodeContext.maxWindowValue, outputWidth <= ONNXNodeContext.maxWindowValue else {
            throw node.error("output_height \(outputHeight) and output_width \(outputWidth) must be 1 to "
                             + "\(ONNXNodeContext.maxWindowValue), sampling_ratio \(samplingRatio) >= 0, spatial_scale finite")
        }
        (halfPixel, maximum) = (transform == "half_pixel", mode == "max")
    }

    /// A bin's value from its samples' weighted reads: the average of the
    /// samples' sums, or the largest single weighted read (onnxruntime's max).
    func pools(_ reads: [[Double]]) -> Double {
        if maximum { return reads.map { $0.max() ?? 0 }.max() ?? 0 }
        return reads.reduce(0) { $0 + $1.reduce(0, +) } / Double(max(reads.count, 1))
    }

    /// Per bin of region `corners` (row-major), per sample, its four
    /// bilinear taps (offsets in one channel's plane, weights); a sample
    /// outside the image has none. Spends `budget` on the samples of every
    /// channel.
    func bins(_ corners: [Double], height: Int, width: Int, budget: inout Int, channels: Int,
              _ node: ONNXNodeContext) throws -> [[[(offset: Int, weight: Double)]]] {
        guard corners.allSatisfy(\.isFinite) else { throw node.error("rois hold \(corners); coordinates must be finite") }
        let offset = halfPixel ? 0.5 : 0
        let (x0, y0) = (corners[0] * scale - offset, corners[1] * scale - offset)
        var (roiWidth, roiHeight) = (corners[2] * scale - offset - x0, corners[3] * scale - offset - y0)
        if !halfPixel { (roiWidth, roiHeight) = (max(roiWidth, 1), max(roiHeight, 1)) }
        let (binHeight, binWidth) = (roiHeight / Double(outputHeight), roiWidth / Double(outputWidth))
        let gridSize = { (extent: Double) -> Double in samplingRatio > 0 ? Double(samplingRatio) : extent.rounded(.up) }
        let (gridHeight, gridWidth) = (gridSize(binHeight), gridSize(binWidth))
        let samples = max(gridHeight, 0) * max(gridWidth, 0) * Double(outputHeight * outputWidth * channels)
        guard samples <= Double(budget) else {
            throw node.error("region \(corners) takes more than \(TypedKernels.maxRoiAlignSamples) bilinear samples "
                             + "(sampling_ratio \(samplingRatio)), LayerKit's limit")
        }
        budget -= Int(samples)
        let (rows, columns) = (Int(max(gridHeight, 0)), Int(max(gridWidth, 0)))
        return (0..<(outputHeight * outputWidth)).map { bin in
            let (ph, pw) = (Double(bin / outputWidth), Double(bin % outputWidth))
            return (0..<(rows * columns)).map { s in
                let y = y0 + ph * binHeight + (Double(s / columns) + 0.5) * binHeight / gridHeight
                let x = x0 + pw * binWidth + (Double(s % columns) + 0.5) * binWidth / gridWidth
                return Self.taps(y: y, x: x, height: height, width: width)
            }
        }
    }

    /// The four bilinear taps of the point (y, x), clamped to the image;
    /// none more than one pixel outside it.
    static func taps(y: Double, x: Double, height: Int, width: Int) -> [(offset: Int, weight: Double)] {
        guard y >= -1, y <= Double(height), x >= -1, x <= Double(width) else { return [] }
        let (low, ly) = corner(max(y, 0), extent: height), (left, lx) = corner(max(x, 0), extent: width)
        let (high, right) = (min(low + 1, height - 1), min(left + 1, width - 1))
        return [(low * width + left, (1 - ly) * (1 - lx)), (low * width + right, (1 - ly) * lx),
                (high * width + left, ly * (1 - lx)), (high * width + right, ly * lx)]
    }

    /// The pixel at or before `v` (the last one past the end) and the fraction past it.
    private static func corner(_ v: Double, extent: Int) -> (Int, Double) {
        let low = Int(v)
        return low >= extent - 1 ? (extent - 1, 0) : (low, v - Double(low))
    }
}
