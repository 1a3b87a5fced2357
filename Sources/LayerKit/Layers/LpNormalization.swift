/// ONNX LpNormalization (opsets 1 and 22): `y = x / ||x||_p` along one
/// axis, p 1 (the sum of magnitudes) or 2 (the Euclidean norm), the norm in
/// double precision. A slice of zeros stays zeros (its norm read as 1), as
/// ONNX's reference computes it, rather than 0 / 0.
///
/// Any rank, on the CPU only.
public final class LpNormalization: Layer, Sendable {
    /// The normalized axis (non-negative).
    public let axis: Int
    /// 1 or 2.
    public let p: Int

    /// Throws for a negative axis or a p other than 1 and 2.
    public init(axis: Int, p: Int = 2) throws {
        self.axis = try LayerChecks.nonNegativeAxis(axis, layer: "LpNormalization")
        guard p == 1 || p == 2 else { throw LayerKitError.invalidParameter("LpNormalization: p is \(p); ONNX allows 1 and 2") }
        self.p = p
    }

    public var layerName: String { "LpNormalization" }

    /// The input's shape; throws when the axis is past its rank.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        try LayerChecks.requireAxis(axis, of: inputShapes[0], layer: layerName)
        return [inputShapes[0]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        let (x, y) = (inputs[0].elements, outputs[0].elements)
        let (outer, extent) = (LayerChecks.product(shape[..<axis]), shape[axis])
        let inner = LayerChecks.product(shape[(axis + 1)...])
        for o in 0..<outer {
            for i in 0..<inner {
                let at = { (k: Int) in (o * extent + k) * inner + i }
                var norm = 0.0
                for k in 0..<extent {
                    let v = Double(x[at(k)])
                    norm += p == 1 ? Swift.abs(v) : v * v
                }
                if p == 2 { norm = norm.squareRoot() }
                if norm == 0 { norm = 1 }
                for k in 0..<extent { y[at(k)] = Float(Double(x[at(k)]) / norm) }
            }
        }
    }
}
