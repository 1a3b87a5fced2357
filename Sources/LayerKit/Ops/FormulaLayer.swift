import Foundation

/// A per-element layer written as one formula, e.g.
/// `FormulaLayer(formula: "x * tanh(softplus(x))")` or
/// `FormulaLayer(formula: "max(x, alpha * x)", parameters: ["alpha": 0.1])`:
/// the formula is parsed once, and both the GLSL kernel (compiled by glslang
/// at run time, cached by its text) and the vectorized CPU program are made
/// from it, as for the catalog's ops.
///
/// Every name other than `x` and the functions is a value: a scalar from
/// `parameters`, or per-channel weights (named in `weightNames`, set through
/// `setWeightData` in that order). A value used but not given, or given but
/// not used, is an error naming it (and its column).
public final class FormulaLayer: ElementwiseLayer, @unchecked Sendable {
    override public class var name: String { "Formula" }

    /// The formula as written.
    public let text: String

    /// Parses `formula` and binds its values; `name` labels the layer in
    /// notices, kernels and errors.
    public init(formula: String, name: String = "Formula", parameters: [String: Float] = [:],
                weightNames: [String] = []) throws {
        text = formula
        let definition = try FormulaLayer.definition(formula, name: name, parameters: parameters,
                                                     weightNames: weightNames)
        try super.init(definition: definition, parameters: parameters.mapValues { $0 as Any })
    }

    /// Core ML style: `parameters["formula"]` is the formula, optional
    /// `parameters["weights"]` the per-channel value names (`[String]`), and
    /// every other entry a scalar value.
    public required convenience init(parameters: [String: Any]) throws {
        guard let formula = parameters["formula"] as? String else {
            throw LayerKitError.invalidParameter("Formula: parameter 'formula' must be the formula text")
        }
        let weightNames = parameters["weights"] as? [String] ?? []
        let reader = LayerParameters(parameters, layer: "Formula")
        var scalars: [String: Float] = [:]
        for key in parameters.keys where key != "formula" && key != "weights" {
            scalars[key] = try reader.float(key, default: 0)
        }
        try self.init(formula: formula, parameters: scalars, weightNames: weightNames)
    }

    /// The op declaration of a formula: one value per name it uses, with the
    /// given scalar as its default.
    public static func definition(_ formula: String, name: String, parameters: [String: Float],
                                  weightNames: [String]) throws -> OpDefinition {
        let (expr, firstUse) = try FormulaParser.parse(formula)
        let used = expr.valueNames
        var values: [OpDefinition.Value] = []
        for value in used {
            let perChannel = weightNames.contains(value)
            if let scalar = parameters[value] {
                values.append(.parameter(value, scalar, perChannel: perChannel))
            } else if perChannel {
                values.append(.weight(value))
            } else {
                let hint = FormulaParser.functions[value] == nil ? "" : "; to call the function write \(value)(...)"
                throw FormulaParser.Error(column: firstUse[value] ?? 1,
                                          message: "'\(value)' is used but not given (a parameter or per-channel weights)\(hint)")
            }
        }
        for given in Set(parameters.keys).union(weightNames).sorted() where !used.contains(given) {
            throw FormulaParser.Error(column: 1, message: "'\(given)' is given but the formula does not use it")
        }
        return OpDefinition(name, values: values, formula: expr)
    }
}

extension LayerRegistry {
    /// Registers `formula` under `name`, like a catalog op: `parameters`
    /// are its values' defaults, `weightNames` the values that may come per
    /// channel. `--op name --param k=v` then works as for built-ins.
    public func register(formula: String, named name: String, parameters: [String: Float] = [:],
                         weightNames: [String] = []) throws {
        let definition = try FormulaLayer.definition(formula, name: name, parameters: parameters,
                                                     weightNames: weightNames)
        add(Entry(name: name, weightNames: definition.weightNames, definition: definition) {
            try ElementwiseLayer(definition: definition, parameters: $0)
        })
    }
}

extension LayerRegistry {
    /// Registers `formula` for the model nodes of op type `opType` (in any
    /// domain), as `layerkit run --layer OPTYPE=FORMULA` does: each node's
    /// attributes are the formula's scalar parameters, and its constant
    /// inputs its per-channel weights, matched by name (an input named as a
    /// value of the formula, or ending in `.NAME`, `/NAME` or `_NAME`). A value
    /// the node does not give, or an attribute or constant the formula does
    /// not use, is an error naming it. The formula's syntax is checked here.
    public func register(formula: String, forNodesOfType opType: String) throws {
        let values = try FormulaParser.parse(formula).0.valueNames
        let make = { (attributes: [String: Any], constants: [(name: String, data: Data)]) throws -> CustomLayer in
            let reader = LayerParameters(attributes, layer: opType)
            var scalars: [String: Float] = [:]
            for key in attributes.keys { scalars[key] = try reader.float(key, default: 0) }
            var blobs: [String: Data] = [:]
            for (input, data) in constants {
                guard let value = values.first(where: { value in
                    input == value || [".", "/", "_"].contains { input.hasSuffix($0 + value) }
                }) else {
                    throw LayerKitError.invalidWeights("\(opType): constant input '\(input)' is named after no value "
                                                       + "of the formula \(formula) (its values: "
                                                       + "\(values.isEmpty ? "none" : values.joined(separator: ", ")))")
                }
                blobs[value] = data
            }
            let layer = try FormulaLayer(formula: formula, name: opType, parameters: scalars,
                                         weightNames: blobs.keys.sorted())
            if !blobs.isEmpty { try layer.setWeightData(layer.definition.weightNames.map { blobs[$0] ?? Data() }) }
            return layer
        }
        add(Entry(name: opType, weightNames: [], definition: nil, make: { try make($0, []) }, makeForNode: make))
    }
}
