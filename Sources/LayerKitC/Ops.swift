import CLayerKitAPI
import LayerKit

// The op catalog by index, so a binding (the onnxruntime op library) can
// register every op LayerKit has without a list of its own that could drift.

/// The parameter names `lk_layer_create` takes for `entry`: its scalars
/// (values with a default) and its word choice. A layer without a catalog
/// declaration declares none.
private func parameterNames(of entry: LayerRegistry.Entry) -> [String] {
    guard let definition = entry.definition else { return [] }
    return definition.values.filter { $0.defaultValue != nil }.map(\.name) + [definition.choice?.name].compactMap { $0 }
}

@c @implementation
public func lk_op_count(_ context: OpaquePointer?, _ count: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { context in
        guard let count else { throw CAPIError.invalidArgument("count is NULL") }
        count.pointee = context.registry.all.count
    }
}

@c @implementation
public func lk_op_name(_ context: OpaquePointer?, _ index: Int, _ name: UnsafeMutablePointer<CChar>?,
                       _ capacity: Int, _ length: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { context in
        let entry = try element(context.registry.all, index, "op")
        try writeString(entry.name, to: name, capacity: capacity, length: length)
    }
}

@c @implementation
public func lk_op_parameter_count(_ context: OpaquePointer?, _ op: UnsafePointer<CChar>?,
                                  _ count: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { context in
        let entry = try context.registry.entry(named: try requireString(op, "op"))
        guard let count else { throw CAPIError.invalidArgument("count is NULL") }
        count.pointee = parameterNames(of: entry).count
    }
}

@c @implementation
public func lk_op_parameter_name(_ context: OpaquePointer?, _ op: UnsafePointer<CChar>?, _ index: Int,
                                 _ name: UnsafeMutablePointer<CChar>?, _ capacity: Int,
                                 _ length: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { context in
        let entry = try context.registry.entry(named: try requireString(op, "op"))
        let parameter = try element(parameterNames(of: entry), index, "\(entry.name) parameter")
        try writeString(parameter, to: name, capacity: capacity, length: length)
    }
}
