import Foundation
import LayerKitONNX

/// The conversions of the ai.onnx.ml tree ensembles (declared in
/// `ONNXOperators+ML`): `TreeEnsembleRegressor` and
/// `TreeEnsembleClassifier` (ai.onnx.ml 1-3, what skl2onnx writes for
/// scikit-learn's trees, forests and gradient boosting) and opset 5's
/// `TreeEnsemble`. Attribute names, defaults and codes follow the
/// ai.onnx.ml spec. Thresholds, weights and base values are kept as the
/// file gives them (the `_as_tensor` forms in double), so a float64 input
/// computes in double and a float32 one as with the float attributes.
extension ONNXOperators {
    /// The node attributes both ai.onnx.ml 1-3 ensembles share.
    private static let treeNodeAttributes = [
        "nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_values_as_tensor", "nodes_modes",
        "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true", "nodes_hitrates",
        "nodes_hitrates_as_tensor", "base_values", "base_values_as_tensor", "post_transform",
    ]

    static func treeEnsembleRegressor(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(treeNodeAttributes + ["n_targets", "aggregate_function", "target_ids", "target_nodeids",
                                                         "target_treeids", "target_weights", "target_weights_as_tensor"])
        let targets = try node.int("n_targets", default: 1)
        let name = try node.string("aggregate_function", default: "SUM")
        guard let aggregate = TreeEnsembleRegressor.Aggregate(rawValue: name) else {
            throw node.error("aggregate_function '\(name)' is not one of SUM, AVERAGE, MIN, MAX")
        }
        let forest = try idForest(node, prefix: "target", targets: targets)
        let layer = try TreeEnsembleRegressor(name: "TreeEnsembleRegressor", forest: forest, targets: targets,
                                              aggregate: aggregate, baseValues: try doubles(node, "base_values"),
                                              postTransform: try postTransform(node), features: features(node))
        return ConvertedNode(layer: layer, inputs: [0])
    }

    static func treeEnsembleClassifier(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(treeNodeAttributes + ["classlabels_int64s", "classlabels_strings", "class_ids",
                                                         "class_nodeids", "class_treeids", "class_weights",
                                                         "class_weights_as_tensor"])
        let labels = try classLabels(node, integers: "classlabels_int64s")
        let forest = try idForest(node, prefix: "class", targets: labels.count)
        let layer = try TreeEnsembleClassifier(forest: forest, labels: labels,
                                               baseValues: try doubles(node, "base_values").map { Float($0) },
                                               postTransform: try postTransform(node), features: features(node))
        return ConvertedNode(layer: layer, inputs: [0])
    }

    /// Opset 5's `TreeEnsemble`: integer codes for modes, aggregation and
    /// transform; leaves apart from nodes; BRANCH_MEMBER sets.
    static func treeEnsemble(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["aggregate_function", "leaf_targetids", "leaf_weights", "membership_values", "n_targets",
                                    "nodes_falseleafs", "nodes_falsenodeids", "nodes_featureids", "nodes_hitrates",
                                    "nodes_missing_value_tracks_true", "nodes_modes", "nodes_splits", "nodes_trueleafs",
                                    "nodes_truenodeids", "post_transform", "tree_roots"])
        let aggregates: [TreeEnsembleRegressor.Aggregate] = [.average, .sum, .min, .max]
        let code = try node.int("aggregate_function", default: 1)
        guard aggregates.indices.contains(code) else {
            throw node.error("aggregate_function \(code) is not one of 0 (AVERAGE), 1 (SUM), 2 (MIN), 3 (MAX)")
        }
        let transforms: [LinearClassifier.PostTransform] = [.none, .softmax, .logistic, .softmaxZero, .probit]
        let transform = try node.int("post_transform", default: 0)
        guard transforms.indices.contains(transform) else {
            throw node.error("post_transform \(transform) is not one of 0 (NONE) to 4 (PROBIT)")
        }
        let targets = try node.int("n_targets", default: 1)
        let modes = try node.node.tensor("nodes_modes")?.int64s() ?? []
        guard modes.allSatisfy({ (0...255).contains($0) }) else { throw node.error("nodes_modes holds a code past 255") }
        let forest: DecisionForest
        do {
            forest = try DecisionForest(
                indices: node.ints("tree_roots") ?? [], features: node.ints("nodes_featureids") ?? [],
                splits: tensorDoubles(node, "nodes_splits"), modes: modes.map { UInt8($0) },
                trueChildren: node.ints("nodes_truenodeids") ?? [], trueLeaf: node.ints("nodes_trueleafs") ?? [],
                falseChildren: node.ints("nodes_falsenodeids") ?? [], falseLeaf: node.ints("nodes_falseleafs") ?? [],
                missingTracksTrue: node.ints("nodes_missing_value_tracks_true") ?? [],
                membership: tensorDoubles(node, "membership_values"), leafTargets: node.ints("leaf_targetids") ?? [],
                leafWeights: tensorDoubles(node, "leaf_weights"), targetCount: targets, featureCount: features(node))
        } catch {
            throw node.naming(error)
        }
        let layer = try TreeEnsembleRegressor(name: "TreeEnsemble", forest: forest, targets: targets,
                                              aggregate: aggregates[code], baseValues: [],
                                              postTransform: transforms[transform], features: features(node))
        return ConvertedNode(layer: layer, inputs: [0])
    }

    /// The forest of an ai.onnx.ml 1-3 ensemble, its leaf weights from the
    /// `<prefix>_ids`, `_nodeids`, `_treeids`, `_weights` lists.
    private static func idForest(_ node: ONNXNodeContext, prefix: String, targets: Int) throws -> DecisionForest {
        guard (1...DecisionForest.maxTargets).contains(targets) else {
            throw node.error("\(prefix == "target" ? "n_targets" : "the class label count") \(targets) is not in "
                             + "1...\(DecisionForest.maxTargets)")
        }
        do {
            return try DecisionForest(
                ids: node.ints("nodes_treeids") ?? [], nodeIDs: node.ints("nodes_nodeids") ?? [],
                features: node.ints("nodes_featureids") ?? [], thresholds: doubles(node, "nodes_values"),
                modes: node.node.strings("nodes_modes") ?? [], trueIDs: node.ints("nodes_truenodeids") ?? [],
                falseIDs: node.ints("nodes_falsenodeids") ?? [],
                missingTracksTrue: node.ints("nodes_missing_value_tracks_true") ?? [],
                weightTreeIDs: node.ints("\(prefix)_treeids") ?? [], weightNodeIDs: node.ints("\(prefix)_nodeids") ?? [],
                weightTargets: node.ints("\(prefix)_ids") ?? [], weightValues: doubles(node, "\(prefix)_weights"),
                targetCount: targets, featureCount: features(node))
        } catch {
            throw node.naming(error)
        }
    }

    /// The `post_transform` string attribute of ai.onnx.ml 1-3.
    static func postTransform(_ node: ONNXNodeContext) throws -> LinearClassifier.PostTransform {
        let name = try node.string("post_transform", default: "NONE")
        guard let transform = LinearClassifier.PostTransform(rawValue: name) else {
            throw node.error("post_transform '\(name)' is not one of NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO, PROBIT")
        }
        return transform
    }
}
