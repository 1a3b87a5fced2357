import Foundation
import LayerKitONNX

/// The `ai.onnx.ml` ops LayerKit runs (on the CPU): the linear models, tree
/// ensembles, SVMs and preprocessing that scikit-learn exports through
/// skl2onnx (the conversions of the larger families in `+MLTrees`, `+MLSVM`
/// and `+MLPreprocessing`). Declared as
/// the standard ops are (`ONNXOperator`), in a table of their own
/// (`mlTable`), consulted for nodes of that domain; attribute names and
/// defaults follow the ai.onnx.ml operator spec, and behaviour where the
/// spec is silent follows onnxruntime (the reference the `ml` fixtures come
/// from).
extension ONNXOperators {
    /// The domain of the ops in `mlTable`.
    static let mlDomain = "ai.onnx.ml"

    /// The ai.onnx.ml ops. Their arity does not change across ai.onnx.ml
    /// opsets 1 to 5; their versions are not checked.
    static let ml: [ONNXOperator] = [
        // The regressors compute a float64 input in double (`TypedKernels+Float64Regression`).
        ONNXOperator("LinearRegressor", through: nil, inputs: 1...1, fold: TypedKernels.float64Regression, linearRegressor),
        // The classifiers' string labels are named by their typed kernel (`TypedKernels+ClassLabels`).
        ONNXOperator("LinearClassifier", through: nil, inputs: 1...1, outputs: 2...2, fold: TypedKernels.stringLabels,
                     linearClassifier),
        ONNXOperator("Scaler", through: nil, inputs: 1...1, scaler),
        ONNXOperator("Normalizer", through: nil, inputs: 1...1, normalizer),
        ONNXOperator("TreeEnsembleRegressor", through: nil, inputs: 1...1, fold: TypedKernels.float64Regression, treeEnsembleRegressor),
        ONNXOperator("TreeEnsembleClassifier", through: nil, inputs: 1...1, outputs: 2...2, fold: TypedKernels.stringLabels,
                     treeEnsembleClassifier),
        ONNXOperator("TreeEnsemble", through: nil, inputs: 1...1, fold: TypedKernels.float64Regression, treeEnsemble),
        ONNXOperator("SVMRegressor", through: nil, inputs: 1...1, fold: TypedKernels.float64Regression, svmRegressor),
        ONNXOperator("SVMClassifier", through: nil, inputs: 1...1, outputs: 2...2, fold: TypedKernels.stringLabels,
                     svmClassifier),
        ONNXOperator("Binarizer", through: nil, inputs: 1...1, binarizer),
        ONNXOperator("Imputer", through: nil, inputs: 1...1, imputer),
        // The encoders compute string and integer values in their own type
        // (`TypedKernels+Encoders`), float values computed by a float layer by their layers.
        ONNXOperator("ArrayFeatureExtractor", through: nil, inputs: 2...2, fold: TypedKernels.arrayFeatureExtractor,
                     arrayFeatureExtractor),
        ONNXOperator("OneHotEncoder", through: nil, inputs: 1...1, fold: TypedKernels.oneHotEncoder, oneHotEncoder),
        ONNXOperator("LabelEncoder", through: nil, inputs: 1...1, fold: TypedKernels.labelEncoder, labelEncoder),
        ONNXOperator("FeatureVectorizer", through: nil, inputs: 1...Int.max, fold: TypedKernels.featureVectorizer,
                     featureVectorizer),
        ONNXOperator("CategoryMapper", through: nil, inputs: 1...1, fold: TypedKernels.categoryMapper) { node in
            throw node.error("maps string or int64 values; its input is a float value")
        },
        // skl2onnx puts ZipMap after every classifier unless told not to: a
        // sequence of maps (a container value), made by a typed step on the CPU.
        ONNXOperator("ZipMap", through: nil, inputs: 1...1, fold: TypedKernels.zipMap) { node in
            throw node.error("makes a sequence of maps, which only its typed kernel computes; its input must be a "
                             + "float32 value")
        },
    ]

    /// The ai.onnx.ml ops, by op type.
    static let mlTable: [String: ONNXOperator] = byName(ml)

    /// Every ai.onnx.ml op type LayerKit knows, for error messages.
    static var supportedMLOps: [String] { mlTable.keys.sorted() }

    /// The declaration of `node`'s op: `table`'s for the default domain,
    /// `mlTable`'s for ai.onnx.ml, nil for other domains.
    static func declaration(of node: ONNXNode) -> ONNXOperator? {
        if node.domain == trainingDomain { return trainingTable[node.opType] }
        return node.isStandard ? table[node.opType] : node.domain == mlDomain ? mlTable[node.opType] : nil
    }

    static func linearRegressor(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["coefficients", "coefficients_as_tensor", "intercepts", "intercepts_as_tensor", "targets",
                                    "post_transform"])
        let transform = try node.string("post_transform", default: "NONE")
        guard transform == "NONE" else {
            throw node.error("post_transform '\(transform)' is not supported (only NONE)")
        }
        let layer = try LinearRegressor(coefficients: doubles(node, "coefficients"), intercepts: doubles(node, "intercepts"),
                                        targets: node.int("targets", default: 1),
                                        features: features(node))
        return ConvertedNode(layer: layer, inputs: [0])
    }

    static func linearClassifier(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["coefficients", "intercepts", "classlabels_ints", "classlabels_strings",
                                    "multi_class", "post_transform"])
        let layer = try LinearClassifier(coefficients: node.node.floats("coefficients") ?? [],
                                         intercepts: node.node.floats("intercepts") ?? [],
                                         labels: classLabels(node, integers: "classlabels_ints"),
                                         postTransform: postTransform(node), features: features(node))
        return ConvertedNode(layer: layer, inputs: [0])
    }

    static func scaler(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["offset", "scale"])
        let layer = try Scaler(offset: node.node.floats("offset") ?? [0], scale: node.node.floats("scale") ?? [1],
                               features: features(node))
        return ConvertedNode(layer: layer, inputs: [0])
    }

    static func normalizer(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["norm"])
        let name = try node.string("norm", default: "MAX")
        guard let norm = Normalizer.Norm(rawValue: name) else {
            throw node.error("norm '\(name)' is not one of MAX, L1, L2")
        }
        _ = try features(node)
        return ConvertedNode(layer: Normalizer(norm), inputs: [0])
    }

    /// Attribute `name` (floats, widened) or `name_as_tensor` (a double
    /// tensor, exact); empty when neither is there. The tree ensembles'
    /// `_as_tensor` attributes are ai.onnx.ml's; LayerKit reads the same
    /// form for every float list of these ops (`coefficients_as_tensor`,
    /// ...), which its Core ML translation writes to keep Core ML's doubles.
    static func doubles(_ node: ONNXNodeContext, _ name: String) throws -> [Double] {
        if let values = try node.node.floats(name) { return values.map(Double.init) }
        return try tensorDoubles(node, name + "_as_tensor")
    }

    /// A float tensor attribute's values as Doubles; empty when absent.
    static func tensorDoubles(_ node: ONNXNodeContext, _ name: String) throws -> [Double] {
        guard let tensor = try node.node.tensor(name) else { return [] }
        let values: TypedTensor
        do { values = try tensor.typed() } catch { throw node.error("attribute '\(name)': \(error)") }
        guard values.elementType.isFloatingPoint else {
            throw node.error("attribute '\(name)' is a \(values.elementType) tensor; a float tensor was expected")
        }
        return values.doubles()
    }

    /// A classifier's labels as its layer takes them: the integers of
    /// attribute `integers`, or for `classlabels_strings` their indices,
    /// which the op's typed kernel names (`TypedKernels.stringLabels`).
    static func classLabels(_ node: ONNXNodeContext, integers: String) throws -> [Int] {
        if let strings = try node.node.strings("classlabels_strings") { return Array(strings.indices) }
        return try node.ints(integers) ?? []
    }

    /// The features of the input: `[N, C]` or `[C]` (one row), as
    /// onnxruntime takes them.
    static func features(_ node: ONNXNodeContext) throws -> Int {
        let shape = try node.shape(0)
        guard shape.count == 1 || shape.count == 2 else {
            throw node.error("takes a [N, C] (or [C]) input, got \(Tensor.describe(shape))")
        }
        return shape[shape.count - 1]
    }
}
