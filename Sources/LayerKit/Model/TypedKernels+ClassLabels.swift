import LayerKitONNX

/// The string labels of the ai.onnx.ml classifiers (LinearClassifier,
/// SVMClassifier, TreeEnsembleClassifier with `classlabels_strings`, as
/// skl2onnx writes a scikit-learn model fitted on string targets).
extension TypedKernels {
    /// The classifier's label (a string tensor) and scores (float32): its
    /// float layer, built with the labels' indices in place of the strings
    /// (`ONNXOperators.classLabels`), computes the winning indices and the
    /// scores on the input as float32; each index becomes the string at
    /// that position. Nil for integer labels, which the float layer gives
    /// itself.
    static func stringLabels(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        guard let names = try node.node.strings("classlabels_strings") else { return nil }
        let x = try input(0, inputs, node)
        guard x.elementType.isFloatingPoint else {
            throw node.error("takes float features, got a \(x.elementType) input")
        }
        guard let convert = ONNXOperators.declaration(of: node.node)?.convert,
              let layer = try node.memoizedLayer({ try convert(node).layer }) else {
            throw node.error("has no layer to compute its scores")
        }
        let features = try x.float32Tensor()
        let outputs = try layer.outputShapes(forInputShapes: [features.shape]).map { try Tensor(shape: $0) }
        try layer.evaluate(inputs: [features], outputs: outputs)
        guard outputs.count == 2 else { throw node.error("its layer makes \(outputs.count) outputs; expected label and scores") }
        let labels = try outputs[0].values.map { index -> String in
            guard let i = Int(exactly: index), names.indices.contains(i) else {
                throw node.error("computed the class index \(index), not one of the \(names.count) classlabels_strings")
            }
            return names[i]
        }
        return [try TypedTensor(shape: outputs[0].shape, strings: labels), TypedTensor(outputs[1])]
    }
}
