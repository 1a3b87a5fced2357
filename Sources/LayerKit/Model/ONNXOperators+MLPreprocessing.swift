import Foundation
import LayerKitONNX

/// The conversions of the ai.onnx.ml preprocessing ops (declared in
/// `ONNXOperators+ML`) to float layers, for float values a float layer
/// computes: `Binarizer`, `Imputer`, `ArrayFeatureExtractor`,
/// `OneHotEncoder` (integer categories), `LabelEncoder` (int64 and float
/// keys and values) and `FeatureVectorizer`. String and integer values take
/// the encoders' typed kernels instead (`TypedKernels+Encoders`); a string
/// form met with a float value is refused by name.
extension ONNXOperators {
    /// The error of an op's string form on a float value.
    private static func refusingStrings(_ node: ONNXNodeContext, _ attribute: String) -> LayerKitError {
        node.error("string \(attribute) need a string input; this one is a float value")
    }

    /// The node's `inputs` that are integer constants (an integer graph
    /// input is a value of the plan, so it arrives as one), as the Float32
    /// tensors the layers compute on; exact to 2^24.
    static func integerConstants(_ node: ONNXNodeContext, _ inputs: [Int]) throws -> [Int: Tensor] {
        var tensors: [Int: Tensor] = [:]
        for i in inputs where i < node.initializers.count {
            guard let constant = node.initializers[i], let type = ElementType(rawValue: constant.dataType.rawValue),
                  type.isInteger || type == .bool else { continue }
            do {
                tensors[i] = try Tensor(shape: constant.dims, values: constant.int64s().map(Float.init))
            } catch {
                throw node.error("input \(i): \(error)")
            }
        }
        return tensors
    }

    static func binarizer(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["threshold"])
        return ConvertedNode(layer: Binarizer(threshold: try node.float("threshold", default: 0)), inputs: [0],
                             reshapedConstants: try integerConstants(node, [0]))
    }

    static func imputer(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["imputed_value_floats", "imputed_value_int64s", "replaced_value_float",
                                    "replaced_value_int64"])
        let imputed: [Float], replaced: Float
        if let ints = try node.ints("imputed_value_int64s") {
            (imputed, replaced) = (ints.map(Float.init), Float(try node.int("replaced_value_int64", default: 0)))
        } else {
            (imputed, replaced) = (try node.node.floats("imputed_value_floats") ?? [],
                                   try node.float("replaced_value_float", default: 0))
        }
        do {
            return ConvertedNode(layer: try Imputer(imputed: imputed, replaced: replaced, features: features(node)),
                                 inputs: [0], reshapedConstants: try integerConstants(node, [0]))
        } catch {
            throw node.naming(error)
        }
    }

    static func arrayFeatureExtractor(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes([])
        let indices = try node.constantInts(1, "the indices Y")
        return ConvertedNode(layer: try ArrayFeatureExtractor(indices: indices), inputs: [0],
                             reshapedConstants: try integerConstants(node, [0]))
    }

    static func oneHotEncoder(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["cats_int64s", "cats_strings", "zeros"])
        if try node.node.strings("cats_strings") != nil { throw refusingStrings(node, "categories (cats_strings)") }
        let layer = try OneHotEncoder(categories: (try node.ints("cats_int64s") ?? []).map { Int64($0) },
                                      allowsUnknown: try node.int("zeros", default: 1) != 0)
        return ConvertedNode(layer: layer, inputs: [0], reshapedConstants: try integerConstants(node, [0]))
    }

    static func labelEncoder(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["keys_floats", "keys_int64s", "keys_strings", "values_floats", "values_int64s",
                                    "values_strings", "default_float", "default_int64", "default_string", "classes_strings",
                                    "keys_tensor", "values_tensor", "default_tensor"])
        for name in ["keys_strings", "values_strings", "classes_strings"] where try node.node.strings(name) != nil {
            throw refusingStrings(node, "keys or values (\(name))")
        }
        func numbers(_ prefix: String) throws -> (values: [Float], isFloat: Bool)? {
            if let floats = try node.node.floats(prefix + "_floats") { return (floats, true) }
            if let ints = try node.ints(prefix + "_int64s") { return (ints.map(Float.init), false) }
            guard let tensor = try node.node.tensor(prefix + "_tensor") else { return nil }
            let type = ElementType(rawValue: tensor.dataType.rawValue)
            if type == .string { throw refusingStrings(node, "keys or values (\(prefix)_tensor)") }
            let isFloat = type?.isFloatingPoint ?? false
            return (isFloat ? try tensor.floats() : try tensor.int64s().map(Float.init), isFloat)
        }
        guard let keys = try numbers("keys"), let values = try numbers("values") else {
            throw node.error("needs keys and values (keys_floats or keys_int64s, values_floats or values_int64s)")
        }
        var defaultValue: Float = values.isFloat ? -0.0 : -1
        if let tensor = try node.node.tensor("default_tensor") {
            guard ElementType(rawValue: tensor.dataType.rawValue) != .string, let value = try (values.isFloat ? tensor.floats() : tensor.int64s().map(Float.init)).first
            else { throw refusingStrings(node, "defaults (default_tensor)") }
            defaultValue = value
        } else if values.isFloat {
            defaultValue = try node.float("default_float", default: -0.0)
        } else {
            defaultValue = Float(try node.int("default_int64", default: -1))
        }
        do {
            return ConvertedNode(layer: try LabelEncoder(keys: keys.values, values: values.values, defaultValue: defaultValue),
                                 inputs: [0], reshapedConstants: try integerConstants(node, [0]))
        } catch {
            throw node.naming(error)
        }
    }

    static func featureVectorizer(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["inputdimensions"])
        let dimensions = try node.ints("inputdimensions") ?? []
        let given = node.node.inputs.indices.filter { node.has($0) }
        guard dimensions.count == given.count else {
            throw node.error("inputdimensions has \(dimensions.count) values for \(given.count) inputs")
        }
        do {
            return ConvertedNode(layer: try FeatureVectorizer(dimensions: dimensions), inputs: given,
                                 reshapedConstants: try integerConstants(node, given))
        } catch {
            throw node.naming(error)
        }
    }
}
