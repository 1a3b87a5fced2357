/// ONNX MeanVarianceNormalization (opsets 9 and 13):
/// `y = (x - mean) / (sqrt(variance) + 1e-9)`, the mean and variance
/// (`E[(x - mean)^2]`) over `axes` for each index of the other axes. The
/// epsilon is added to the standard deviation, not the variance, as ONNX's
/// function body for the op adds it.
///
/// Any rank, on the CPU only, in double precision.
public final class MeanVarianceNormalization: Layer, Sendable {
    /// The axes the statistics run over: distinct, non-negative, ascending.
    public let axes: [Int]
    /// What ONNX's function body adds to the standard deviation.
    static let epsilon = 1e-9

    /// Throws unless `axes` are distinct and non-negative (at least one).
    public init(axes: [Int]) throws {
        guard !axes.isEmpty, Set(axes).count == axes.count, axes.allSatisfy({ $0 >= 0 }) else {
            throw LayerKitError.invalidParameter("MeanVarianceNormalization: axes \(axes) must be distinct and non-negative")
        }
        self.axes = axes.sorted()
    }

    public var layerName: String { "MeanVarianceNormalization" }

    /// The input's shape; throws when an axis is past its rank.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        guard let last = axes.last, last < shape.count else {
            throw LayerKitError.shapeMismatch("\(layerName): axes \(axes) do not fit input \(Tensor.describe(shape))")
        }
        return [shape]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        let (x, y) = (inputs[0].elements, outputs[0].elements)
        // Each element's statistics slot: its index along the kept axes.
        let kept = shape.indices.filter { !axes.contains($0) }
        let slotCount = LayerChecks.product(kept.map { shape[$0] }[...])
        var slots = [Int](repeating: 0, count: x.count)
        var index = Array(repeating: 0, count: shape.count)
        for i in 0..<x.count {
            slots[i] = kept.reduce(0) { $0 * shape[$1] + index[$1] }
            RowMajorIndex.step(&index, through: shape)
        }
        let perSlot = Double(x.count / max(slotCount, 1))
        var mean = [Double](repeating: 0, count: slotCount), variance = mean
        for i in 0..<x.count { mean[slots[i]] += Double(x[i]) }
        for s in 0..<slotCount { mean[s] /= perSlot }
        for i in 0..<x.count {
            let d = Double(x[i]) - mean[slots[i]]
            variance[slots[i]] += d * d
        }
        let scale = variance.map { 1 / (($0 / perSlot).squareRoot() + Self.epsilon) }
        for i in 0..<x.count { y[i] = Float((Double(x[i]) - mean[slots[i]]) * scale[slots[i]]) }
    }
}
