/// Element `index` of `items`, or an error naming `what` and the valid range:
/// every index a caller passes (a model's inputs and outputs, devices, ops,
/// an op's parameters) is checked here before it is used.
func element<T>(_ items: [T], _ index: Int, _ what: String) throws -> T {
    guard items.indices.contains(index) else {
        throw CAPIError.invalidArgument("\(what) index \(index) is out of range (0 ..< \(items.count))")
    }
    return items[index]
}
