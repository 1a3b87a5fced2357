import LayerKitCore
import Foundation
// Core ML's tree ensembles (TreeEnsemble.proto) and support vector
// machines (SVM.proto) as the ai.onnx.ml TreeEnsemble* and SVM* nodes.

extension CoreMLClassicTranslator {
    /// ONNX's names of Core ML's `TreeNodeBehavior` values, in their order.
    private static let nodeModes = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "LEAF"]
    /// ONNX's names of `TreeEnsemblePostEvaluationTransform`: NoTransform,
    /// Classification_SoftMax, Regression_Logistic, Classification_SoftMaxWithZeroClassReference.
    private static let treeTransforms = ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"]

    /// The nodes of a `TreeEnsembleParameters` as ONNX's attribute lists.
    private struct Forest {
        var treeIDs: [Int] = [], nodeIDs: [Int] = [], features: [Int] = [], values: [Double] = [], modes: [String] = []
        var trueIDs: [Int] = [], falseIDs: [Int] = [], missingTracksTrue: [Int] = []
        /// One entry per leaf value: tree, node, prediction dimension, value.
        var leafTrees: [Int] = [], leafNodes: [Int] = [], leafTargets: [Int] = [], leafValues: [Double] = []
        var dimensions = 0
        var baseValues: [Double] = []
    }

    /// `TreeEnsembleRegressor` → `TreeEnsembleRegressor` (leaf values summed
    /// per dimension, plus the base values); `TreeEnsembleClassifier` →
    /// `TreeEnsembleClassifier`: one dimension per class, or for two classes
    /// one dimension, the second class's probability (or, with the logistic
    /// transform, its margin), as ONNX's binary form.
    mutating func treeEnsemble(_ model: CoreMLClassicModel, _ reader: inout ProtobufReader) throws {
        let (x, width) = try input(of: model)
        var forest: Forest?, transform: Int32 = 0
        while let field = try reader.nextField() {
            switch field.number {
            case 1:
                var sub = try reader.message(field, "treeEnsemble", type: "TreeEnsembleParameters")
                forest = try Self.forest(decoding: &sub)
            case 2: transform = try reader.int32(field, "postEvaluationTransform")
            default: try reader.skip(field)
            }
        }
        guard let forest, !forest.nodeIDs.isEmpty else { throw LayerKitError.invalidModel("a \(model.typeName) without trees") }
        guard (0..<Int32(Self.treeTransforms.count)).contains(transform) else {
            throw LayerKitError.invalidModel("postEvaluationTransform \(transform) is not one Core ML defines")
        }
        guard forest.features.allSatisfy({ (0..<width).contains($0) }) else {
            throw LayerKitError.invalidModel("a tree branches on a feature past the input's \(width) values")
        }
        guard forest.dimensions >= 1, forest.leafTargets.allSatisfy({ (0..<forest.dimensions).contains($0) }),
              forest.baseValues.isEmpty || forest.baseValues.count == forest.dimensions else {
            throw LayerKitError.invalidModel("the trees predict \(forest.dimensions) dimensions; a leaf or the "
                                             + "\(forest.baseValues.count) base values do not fit them")
        }
        var attributes: [String: ONNXAttribute] = [
            "nodes_treeids": .ints(forest.treeIDs), "nodes_nodeids": .ints(forest.nodeIDs),
            "nodes_featureids": .ints(forest.features), "nodes_values_as_tensor": try doubleTensor(forest.values, "branch values"),
            "nodes_modes": .strings(forest.modes), "nodes_truenodeids": .ints(forest.trueIDs),
            "nodes_falsenodeids": .ints(forest.falseIDs), "nodes_missing_value_tracks_true": .ints(forest.missingTracksTrue),
            "post_transform": .string(Self.treeTransforms[Int(transform)]),
        ]
        if !forest.baseValues.isEmpty {
            attributes["base_values_as_tensor"] = try doubleTensor(forest.baseValues, "base values")
        }
        guard model.typeNumber == 402 else {
            attributes.merge(["n_targets": .int(forest.dimensions), "aggregate_function": .string("SUM"),
                              "target_treeids": .ints(forest.leafTrees), "target_nodeids": .ints(forest.leafNodes),
                              "target_ids": .ints(forest.leafTargets),
                              "target_weights_as_tensor": try doubleTensor(forest.leafValues, "leaf values")]) { $1 }
            addMLNode("TreeEnsembleRegressor", [x], [(try output(of: model), forest.dimensions)], attributes)
            return
        }
        let labels = try requiredLabels(model)
        let binary = labels.count == 2 && forest.dimensions == 1
        guard binary || forest.dimensions == labels.count else {
            throw LayerKitError.invalidModel("the trees predict \(forest.dimensions) dimensions for \(labels.count) classes")
        }
        // Binary: the one dimension, the second class's score, is class 0's
        // weights in ONNX's binary form (onnxruntime's, as skl2onnx writes it).
        attributes.merge(labels.attribute(integers: "classlabels_int64s")) { $1 }
        attributes.merge(["class_treeids": .ints(forest.leafTrees),
                          "class_nodeids": .ints(forest.leafNodes), "class_ids": .ints(forest.leafTargets),
                          "class_weights_as_tensor": try doubleTensor(forest.leafValues, "leaf values")]) { $1 }
        let (label, probabilities) = try classifierOutputs(model)
        addMLNode("TreeEnsembleClassifier", [x], [(label, 1), (probabilities, labels.count)], attributes)
    }

    /// Decodes a `TreeEnsembleParameters`: its nodes, dimensions and base values.
    private static func forest(decoding reader: inout ProtobufReader) throws -> Forest {
        var forest = Forest()
        while let field = try reader.nextField() {
            switch field.number {
            case 1:
                var node = try reader.message(field, "nodes", type: "TreeNode")
                var (tree, id, behavior, feature, value) = (0, 0, Int32(0), 0, 0.0)
                var (trueID, falseID, missingTrue) = (0, 0, 0)
                var leaves: [(target: Int, value: Double)] = []
                while let f = try node.nextField() {
                    switch f.number {
                    case 1: tree = Int(clamping: try node.int64(f, "treeId"))
                    case 2: id = Int(clamping: try node.int64(f, "nodeId"))
                    case 3: behavior = try node.int32(f, "nodeBehavior")
                    case 10: feature = Int(clamping: try node.int64(f, "branchFeatureIndex"))
                    case 11: value = try node.double(f, "branchFeatureValue")
                    case 12: trueID = Int(clamping: try node.int64(f, "trueChildNodeId"))
                    case 13: falseID = Int(clamping: try node.int64(f, "falseChildNodeId"))
                    case 14: missingTrue = try node.int64(f, "missingValueTracksTrueChild") != 0 ? 1 : 0
                    case 20:
                        var info = try node.message(f, "evaluationInfo", type: "EvaluationInfo")
                        var leaf = (target: 0, value: 0.0)
                        while let g = try info.nextField() {
                            switch g.number {
                            case 1: leaf.target = Int(clamping: try info.int64(g, "evaluationIndex"))
                            case 2: leaf.value = try info.double(g, "evaluationValue")
                            default: try info.skip(g)
                            }
                        }
                        leaves.append(leaf)
                    default: try node.skip(f)
                    }
                }
                guard (0..<Int32(nodeModes.count)).contains(behavior) else {
                    throw reader.error("a tree node of behavior \(behavior), which Core ML does not define", at: field.offset)
                }
                forest.treeIDs.append(tree); forest.nodeIDs.append(id); forest.modes.append(nodeModes[Int(behavior)])
                forest.features.append(feature); forest.values.append(value); forest.trueIDs.append(trueID)
                forest.falseIDs.append(falseID); forest.missingTracksTrue.append(missingTrue)
                for leaf in leaves {
                    forest.leafTrees.append(tree); forest.leafNodes.append(id)
                    forest.leafTargets.append(leaf.target); forest.leafValues.append(leaf.value)
                }
            case 2: forest.dimensions = Int(clamping: try reader.int64(field, "numPredictionDimensions"))
            case 3: try reader.appendDoubles(field, "basePredictionValue", to: &forest.baseValues)
            default: try reader.skip(field)
            }
        }
        return forest
    }

    // MARK: Support vector machines

    /// A `Kernel` as ONNX's `kernel_type` and `kernel_params` [gamma, coef0, degree].
    private static func kernel(decoding reader: inout ProtobufReader) throws -> (type: String, parameters: [Double]) {
        var kernel = (type: "LINEAR", parameters: [0.0, 0, 0])
        while let field = try reader.nextField() {
            guard (1...4).contains(field.number) else { try reader.skip(field); continue }
            kernel.type = ["LINEAR", "RBF", "POLY", "SIGMOID"][field.number - 1]
            var sub = try reader.message(field, kernel.type.lowercased() + "Kernel", type: "Kernel")
            while let f = try sub.nextField() {
                switch (field.number, f.number) {
                case (2, 1), (3, 3), (4, 1): kernel.parameters[0] = try sub.double(f, "gamma")
                case (3, 2), (4, 2): kernel.parameters[1] = try sub.double(f, "c")
                case (3, 1): kernel.parameters[2] = Double(try sub.int32(f, "degree"))
                default: try sub.skip(f)
                }
            }
        }
        return kernel
    }

    /// `DenseSupportVectors`: each vector's values, which must be `width` long.
    private static func supportVectors(decoding reader: inout ProtobufReader, width: Int) throws -> [Double] {
        var values: [Double] = []
        while let field = try reader.nextField() {
            guard field.number == 1 else { try reader.skip(field); continue }
            let vector = try reader.doubles(field, "vectors", type: "DenseVector")
            guard vector.count == width else {
                throw reader.error("a support vector of \(vector.count) values for an input of \(width)", at: field.offset)
            }
            values += vector
        }
        return values
    }

    /// `SupportVectorRegressor`: Σ αᵢ k(svᵢ, x) − ρ → `SVMRegressor` (whose rho is added, so −ρ).
    mutating func supportVectorRegressor(_ model: CoreMLClassicModel, _ reader: inout ProtobufReader) throws {
        let (x, width) = try input(of: model)
        var kernel = (type: "LINEAR", parameters: [0.0, 0, 0]), vectors: [Double] = [], alphas: [Double] = [], rho = 0.0
        while let field = try reader.nextField() {
            switch field.number {
            case 1:
                var sub = try reader.message(field, "kernel", type: "Kernel")
                kernel = try Self.kernel(decoding: &sub)
            case 2: throw reader.error("sparse support vectors; LayerKit translates dense ones", at: field.offset)
            case 3:
                var sub = try reader.message(field, "denseSupportVectors", type: "DenseSupportVectors")
                vectors = try Self.supportVectors(decoding: &sub, width: width)
            case 4: alphas = try reader.doubles(field, "coefficients", type: "Coefficients")
            case 5: rho = try reader.double(field, "rho")
            default: try reader.skip(field)
            }
        }
        guard !alphas.isEmpty, alphas.count * width == vectors.count else {
            throw LayerKitError.invalidModel("supportVectorRegressor has \(alphas.count) coefficients for "
                                             + "\(vectors.count / max(width, 1)) support vectors")
        }
        addMLNode("SVMRegressor", [x], [(try output(of: model), 1)], [
            "kernel_type": .string(kernel.type), "kernel_params_as_tensor": try doubleTensor(kernel.parameters, "kernel"),
            "support_vectors_as_tensor": try doubleTensor(vectors, "support vectors"), "n_supports": .int(alphas.count),
            "coefficients_as_tensor": try doubleTensor(alphas, "coefficients"), "rho_as_tensor": try doubleTensor([-rho], "rho"),
        ])
    }

    /// `SupportVectorClassifier` (libsvm's one-versus-one form: K−1
    /// coefficient rows, K(K−1)/2 ρ subtracted, Platt's probA and probB)
    /// → `SVMClassifier` (whose rho is added, so −ρ).
    mutating func supportVectorClassifier(_ model: CoreMLClassicModel, _ reader: inout ProtobufReader) throws {
        let (x, width) = try input(of: model)
        let labels = try requiredLabels(model)
        var kernel = (type: "LINEAR", parameters: [0.0, 0, 0]), vectors: [Double] = [], rows: [[Double]] = []
        var perClass: [Int64] = [], rho: [Double] = [], probA: [Double] = [], probB: [Double] = []
        while let field = try reader.nextField() {
            switch field.number {
            case 1:
                var sub = try reader.message(field, "kernel", type: "Kernel")
                kernel = try Self.kernel(decoding: &sub)
            case 2: try reader.appendInt64s(field, "numberOfSupportVectorsPerClass", to: &perClass)
            case 3: throw reader.error("sparse support vectors; LayerKit translates dense ones", at: field.offset)
            case 4:
                var sub = try reader.message(field, "denseSupportVectors", type: "DenseSupportVectors")
                vectors = try Self.supportVectors(decoding: &sub, width: width)
            case 5: rows.append(try reader.doubles(field, "coefficients", type: "Coefficients"))
            case 6: try reader.appendDoubles(field, "rho", to: &rho)
            case 7: try reader.appendDoubles(field, "probA", to: &probA)
            case 8: try reader.appendDoubles(field, "probB", to: &probB)
            default: try reader.skip(field)
            }
        }
        let count = vectors.count / max(width, 1), k = labels.count
        guard perClass.count == k, perClass.allSatisfy({ $0 >= 0 }), perClass.reduce(0, +) == Int64(count),
              rows.count == k - 1, rows.allSatisfy({ $0.count == count }), rho.count == k * (k - 1) / 2 else {
            throw LayerKitError.invalidModel("supportVectorClassifier's \(count) support vectors, \(perClass) per class, "
                                             + "\(rows.count) coefficient rows and \(rho.count) rho do not fit \(k) classes")
        }
        let (label, probabilities) = try classifierOutputs(model)
        var attributes: [String: ONNXAttribute] = [
            "kernel_type": .string(kernel.type), "kernel_params": .floats(try floats(kernel.parameters, "kernel")),
            "support_vectors": .floats(try floats(vectors, "support vectors")),
            "vectors_per_class": .ints(perClass.map { Int($0) }),
            "coefficients": .floats(try floats(rows.flatMap { $0 }, "coefficients")),
            "rho": .floats(try floats(rho.map { -$0 }, "rho")),
        ].merging(labels.attribute(integers: "classlabels_ints")) { $1 }
        if !probA.isEmpty {
            attributes["prob_a"] = .floats(try floats(probA, "probA"))
            attributes["prob_b"] = .floats(try floats(probB, "probB"))
        }
        addMLNode("SVMClassifier", [x], [(label, 1), (probabilities, k)], attributes)
    }
}
