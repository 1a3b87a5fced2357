import Foundation
import LayerKitONNX

/// The signal ops that make a tensor from scalars: the window functions
/// (Hann, Hamming, Blackman) and MelWeightMatrix, computed in Double and
/// rounded to `output_datatype` (float32 by default), as ONNX's reference.
extension TypedKernels {
    /// A window function's cosine series: a0 - a1 cos(2πn/N) + a2 cos(4πn/N).
    struct WindowSeries: Sendable {
        let coefficients: (Double, Double, Double)
        static let hann = WindowSeries(coefficients: (0.5, 0.5, 0))
        static let hamming = WindowSeries(coefficients: (25.0 / 46, 21.0 / 46, 0))
        static let blackman = WindowSeries(coefficients: (0.42, 0.5, 0.08))
    }

    /// HannWindow, HammingWindow, BlackmanWindow (17): `size` values of the
    /// window, N = size when `periodic` (default), size - 1 when not (a
    /// symmetric window of one value divides by zero there, as numpy does).
    static func window(_ node: ONNXNodeContext, _ inputs: [TypedTensor?], _ series: WindowSeries) throws -> [TypedTensor]? {
        try node.requireAttributes(["output_datatype", "periodic"])
        let size = try scalarInteger(input(0, inputs, node), "size", node)
        guard size >= 0, size <= Int64(ONNXImporter.maxValueElements) else {
            throw node.error("size \(size) must be 0 to \(ONNXImporter.maxValueElements), LayerKit's limit for one tensor")
        }
        let type = try outputType(node)
        let periodic = try node.int("periodic", default: 1) != 0
        let span = Double(periodic ? size : size - 1), (a0, a1, a2) = series.coefficients
        let values = (0..<Int(size)).map { n -> Double in
            let angle = 2 * Double.pi * Double(n) / span
            return a0 - a1 * cos(angle) + a2 * cos(2 * angle)
        }
        return [try TypedTensor(type, shape: [Int(size)], doubles: values)]
    }

    /// MelWeightMatrix-17: [dft_length / 2 + 1, num_mel_bins] triangular
    /// filters, one per mel bin, each rising from the bin before it to its
    /// center and falling to the next; the num_mel_bins + 2 edges evenly
    /// spaced in mel (2595 log10(1 + f/700)) from lower_edge_hertz to
    /// upper_edge_hertz, each at the spectrogram bin (dft_length + 1) * f /
    /// sample_rate, rounded down, as ONNX's reference places them.
    static func melWeightMatrix(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["output_datatype"])
        let names = ["num_mel_bins", "dft_length", "sample_rate"]
        let counts = try names.indices.map { try scalarInteger(input($0, inputs, node), names[$0], node) }
        let (lower, upper) = (try input(3, inputs, node).doubles(), try input(4, inputs, node).doubles())
        guard counts.allSatisfy({ $0 >= 1 && $0 <= Int64(ONNXImporter.maxValueElements) }), lower.count == 1, upper.count == 1 else {
            throw node.error("\(names.joined(separator: ", ")) \(counts) must be >= 1, and the edges scalars")
        }
        let (melBins, length, rate) = (Int(counts[0]), Int(counts[1]), Double(counts[2]))
        guard lower[0] >= 0, lower[0] < upper[0], upper[0].isFinite else {
            throw node.error("the edges \(lower[0]) and \(upper[0]) Hz must be finite with 0 <= lower < upper")
        }
        let spectrogramBins = length / 2 + 1
        let shape = [spectrogramBins, melBins]
        var out = [Double](repeating: 0, count: try ONNXFolding.checkedCount(shape, node))
        let mel = { (hertz: Double) in 2595 * log1p(hertz / 700) / log(10) }
        let (low, step) = (mel(lower[0]), (mel(upper[0]) - mel(lower[0])) / Double(melBins + 2))
        let edges = try (0..<(melBins + 2)).map { i -> Int in
            let hertz = 700 * expm1((Double(i) * step + low) / 2595 * log(10))
            let bin = (Double(length + 1) * hertz / rate).rounded(.down)
            guard bin >= 0, bin < Double(spectrogramBins) else {
                throw node.error("upper_edge_hertz \(upper[0]) reaches past the spectrogram's \(spectrogramBins) bins "
                                 + "at sample_rate \(counts[2])")
            }
            return Int(bin)
        }
        for i in 0..<melBins {
            let (left, center, right) = (edges[i], edges[i + 1], edges[i + 2])
            for j in left...center { out[j * melBins + i] = center == left ? 1 : Double(j - left) / Double(center - left) }
            for j in center..<right { out[j * melBins + i] = Double(right - j) / Double(right - center) }
        }
        return [try TypedTensor(try outputType(node), shape: shape, doubles: out)]
    }

    /// The `output_datatype` attribute (default float32): a float or integer type.
    private static func outputType(_ node: ONNXNodeContext) throws -> ElementType {
        let code = try node.int("output_datatype", default: 1)
        guard let type = ElementType(rawValue: code), type.isFloatingPoint || type.isInteger, type != .bool else {
            throw node.error("output_datatype \(code) is not a float or integer type")
        }
        return type
    }
}
