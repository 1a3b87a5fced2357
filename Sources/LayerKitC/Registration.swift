import CLayerKitAPI
import Foundation
import LayerKit

// Custom layers registered on a context go into its own `LayerRegistry`:
// `lk_layer_create` and the models loaded afterwards on that context find
// them by name; other contexts never see them.

@c @implementation
public func lk_register_formula(_ context: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                _ formula: UnsafePointer<CChar>?, _ names: UnsafePointer<UnsafePointer<CChar>?>?,
                                _ values: UnsafePointer<Double>?, _ count: Int,
                                _ weightNames: UnsafePointer<UnsafePointer<CChar>?>?, _ weightCount: Int) -> lk_status {
    withContext(context) { context in
        let name = try layerName(name)
        let formula = try requireString(formula, "the formula")
        let parameters = try LayerArguments.scalars(names, values, count: count).mapValues { Float($0) }
        let weights = try LayerArguments.names(weightNames, count: weightCount, "weight_names")
        do {
            try context.registry.register(formula: formula, named: name, parameters: parameters, weightNames: weights)
            context.setWeightOrder(weights, of: name)
        } catch let error as FormulaParser.Error {
            throw CAPIError.invalidArgument("formula '\(formula)': \(error)")
        }
    }
}

@c @implementation
public func lk_register_node_formula(_ context: OpaquePointer?, _ opType: UnsafePointer<CChar>?,
                                     _ formula: UnsafePointer<CChar>?) -> lk_status {
    withContext(context) { context in
        let name = try layerName(opType)
        let formula = try requireString(formula, "the formula")
        do {
            try context.registry.register(formula: formula, forNodesOfType: name)
            context.setWeightOrder(nil, of: name)
        } catch let error as FormulaParser.Error {
            throw CAPIError.invalidArgument("formula '\(formula)': \(error)")
        }
    }
}

@c @implementation
public func lk_register_layer(_ context: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ evaluate: lk_evaluate_fn?,
                              _ shape: lk_shape_fn?, _ userData: UnsafeMutableRawPointer?,
                              _ destroy: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) -> lk_status {
    withContext(context) { context in
        let name = try layerName(name)
        guard let evaluate else { throw CAPIError.invalidArgument("the evaluate callback is NULL") }
        // From here on the registration owns `userData`: `destroy` runs when it goes.
        let registration = CallbackRegistration(name: name, evaluate: evaluate, shape: shape, userData: userData,
                                                destroy: destroy)
        context.registry.register(named: name) { parameters in
            guard parameters.isEmpty else {
                throw LayerKitError.invalidParameter("custom layer '\(name)' takes no parameters, got "
                                                     + parameters.keys.sorted().joined(separator: ", "))
            }
            return CallbackLayer(registration: registration)
        }
        context.setWeightOrder(nil, of: name)
    }
}

/// A registered layer's name: non-empty.
private func layerName(_ pointer: UnsafePointer<CChar>?) throws -> String {
    let name = try requireString(pointer, "the name")
    guard !name.isEmpty else { throw CAPIError.invalidArgument("the name is empty") }
    return name
}
