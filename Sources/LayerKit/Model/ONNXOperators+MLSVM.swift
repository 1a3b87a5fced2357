import Foundation
import LayerKitONNX

/// The conversions of the ai.onnx.ml SVMs (declared in `ONNXOperators+ML`):
/// `SVMRegressor` (scikit-learn's SVR, NuSVR, OneClassSVM) and
/// `SVMClassifier` (SVC, NuSVC), every kernel type. The regressor keeps
/// its parameters in double (`ONNXOperators.doubles`).
extension ONNXOperators {
    static func svmRegressor(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["coefficients", "coefficients_as_tensor", "kernel_params", "kernel_params_as_tensor",
                                    "kernel_type", "n_supports", "one_class", "post_transform", "rho", "rho_as_tensor",
                                    "support_vectors", "support_vectors_as_tensor"])
        let transform = try postTransform(node)
        guard transform == .none else { throw node.error("post_transform '\(transform.rawValue)' is not supported (only NONE)") }
        do {
            let layer = try SVMRegressor(kernel: svmKernel(node), supportVectors: doubles(node, "support_vectors"),
                                         vectors: node.int("n_supports", default: 0),
                                         coefficients: doubles(node, "coefficients"),
                                         rho: doubles(node, "rho"), isOneClass: node.int("one_class", default: 0) != 0,
                                         features: features(node))
            return ConvertedNode(layer: layer, inputs: [0])
        } catch {
            throw node.naming(error)
        }
    }

    static func svmClassifier(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["classlabels_ints", "classlabels_strings", "coefficients", "kernel_params",
                                    "kernel_params_as_tensor", "kernel_type",
                                    "post_transform", "prob_a", "prob_b", "rho", "support_vectors", "vectors_per_class"])
        do {
            let layer = try SVMClassifier(
                kernel: svmKernel(node), labels: classLabels(node, integers: "classlabels_ints"),
                vectorsPerClass: node.ints("vectors_per_class") ?? [],
                supportVectors: node.node.floats("support_vectors") ?? [],
                coefficients: node.node.floats("coefficients") ?? [], rho: node.node.floats("rho") ?? [],
                probabilityA: node.node.floats("prob_a") ?? [], probabilityB: node.node.floats("prob_b") ?? [],
                postTransform: postTransform(node), features: features(node))
            return ConvertedNode(layer: layer, inputs: [0])
        } catch {
            throw node.naming(error)
        }
    }

    private static func svmKernel(_ node: ONNXNodeContext) throws -> SVMKernel {
        try SVMKernel(type: node.string("kernel_type", default: "LINEAR"), parameters: doubles(node, "kernel_params"))
    }
}
