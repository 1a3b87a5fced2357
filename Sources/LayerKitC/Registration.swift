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
        let scalars = try strings(names, count, "names")
        let weights = try strings(weightNames, weightCount, "weight_names")
        guard count == 0 || values != nil else { throw CAPIError.invalidArgument("values is NULL with a count of \(count)") }
        var parameters: [String: Float] = [:]
        for (i, scalar) in scalars.enumerated() {
            guard parameters[scalar] == nil else { throw CAPIError.invalidArgument("parameter '\(scalar)' is given twice") }
            let value = values![i]
            guard value.isFinite, abs(value) <= Double(Float.greatestFiniteMagnitude) else {
                throw CAPIError.invalidArgument("parameter '\(scalar)' = \(value) is not a finite float32")
            }
            parameters[scalar] = Float(value)
        }
        guard Set(weights).count == weights.count else { throw CAPIError.invalidArgument("a weight name is given twice") }
        do {
            try context.registry.register(formula: formula, named: name, parameters: parameters, weightNames: weights)
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
    }
}

/// A registered layer's name: non-empty.
private func layerName(_ pointer: UnsafePointer<CChar>?) throws -> String {
    let name = try requireString(pointer, "the name")
    guard !name.isEmpty else { throw CAPIError.invalidArgument("the name is empty") }
    return name
}

/// The most scalar or weight names one registration takes.
private let maxNames = 1024

/// `count` C strings from `pointers` (which may be NULL when `count` is 0).
private func strings(_ pointers: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int, _ what: String) throws -> [String] {
    // A count no formula needs is a caller's bug (or a size_t wrapped negative), never a huge read.
    guard (0...maxNames).contains(count) else {
        throw CAPIError.invalidArgument("\(count) \(what) given; at most \(maxNames)")
    }
    guard count == 0 || pointers != nil else { throw CAPIError.invalidArgument("\(what) is NULL with a count of \(count)") }
    return try (0..<count).map { try requireString(pointers![$0], "\(what)[\($0)]") }
}
