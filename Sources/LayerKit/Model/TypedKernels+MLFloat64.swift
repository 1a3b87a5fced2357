import LayerKitONNX

/// The ai.onnx.ml ops a float64 value goes through in double: Core ML's
/// DOUBLE inputs (coremltools' scikit-learn converter) and skl2onnx's
/// double exports give scikit-learn's float64 results, where the ops' float
/// layers would round every value to float32. A float32 input returns nil:
/// the float layer computes it, as before.
extension TypedKernels {
    /// LinearRegressor, SVMRegressor, TreeEnsembleRegressor, TreeEnsemble on
    /// a float64 input: the node's layer computes it in Double
    /// (`Float64Regressor`), its output float64. Nil for another input
    /// type, or a `post_transform` (computed in float32).
    static func float64Regression(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let x = try input(0, inputs, node)
        guard x.elementType == .float64, let convert = ONNXOperators.declaration(of: node.node)?.convert,
              let regressor = try node.memoizedLayer({ try convert(node).layer }) as? Float64Regressor else {
            return nil
        }
        guard let shape = try regressor.outputShapes(forInputShapes: [x.shape]).first,
              let y = regressor.predict(float64: x.doubles(), rows: x.shape.count == 1 ? 1 : x.shape[0]) else {
            return nil
        }
        return [try TypedTensor(.float64, shape: shape, doubles: y)]
    }

    /// FeatureVectorizer with a float64 input: the inputs side by side in
    /// Double (integer columns widened), as its layer places them.
    static func featureVectorizer(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let given = inputs.compactMap { $0 }
        guard given.contains(where: { $0.elementType == .float64 }) else { return nil }
        let layer = try FeatureVectorizer(dimensions: node.ints("inputdimensions") ?? [])
        guard let shape = try layer.outputShapes(forInputShapes: given.map(\.shape)).first else { return nil }
        let y = layer.vectorized(given.map { $0.doubles() }, shapes: given.map(\.shape), rows: shape[0])
        return [try TypedTensor(.float64, shape: shape, doubles: y)]
    }
}
