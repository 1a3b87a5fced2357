import CLayerKitAPI
import LayerKit

// A formula's value names, from LayerKit's own parser, so a binding (the
// onnxruntime op library, which reads a Formula node's attributes by name)
// never tokenizes the grammar itself.

/// The values `formula` uses, in the order of first use.
private func valueNames(_ formula: UnsafePointer<CChar>?) throws -> [String] {
    try FormulaParser.parse(requireString(formula, "formula")).expr.valueNames
}

@c @implementation
public func lk_formula_value_count(_ context: OpaquePointer?, _ formula: UnsafePointer<CChar>?,
                                   _ count: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { _ in
        let names = try valueNames(formula)
        guard let count else { throw CAPIError.invalidArgument("count is NULL") }
        count.pointee = names.count
    }
}

@c @implementation
public func lk_formula_value_name(_ context: OpaquePointer?, _ formula: UnsafePointer<CChar>?, _ index: Int,
                                  _ name: UnsafeMutablePointer<CChar>?, _ capacity: Int,
                                  _ length: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { _ in
        let value = try element(valueNames(formula), index, "formula value")
        try writeString(value, to: name, capacity: capacity, length: length)
    }
}
