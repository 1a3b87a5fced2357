import LayerKitCore
/// Typed reads of a node's attributes: nil when the attribute is absent, an
/// `invalidModel` error naming the node when it has another kind of value.
extension ONNXNode {
    /// The float attribute `name`.
    public func float(_ name: String) throws -> Float? {
        try attribute(name, "float") { if case .float(let v) = $0 { v } else { nil } }
    }

    /// The int attribute `name`.
    public func int(_ name: String) throws -> Int? {
        try attribute(name, "int") { if case .int(let v) = $0 { v } else { nil } }
    }

    /// The string attribute `name`.
    public func string(_ name: String) throws -> String? {
        try attribute(name, "string") { if case .string(let v) = $0 { v } else { nil } }
    }

    /// The tensor attribute `name`.
    public func tensor(_ name: String) throws -> ONNXTensor? {
        try attribute(name, "tensor") { if case .tensor(let v) = $0 { v } else { nil } }
    }

    /// The floats attribute `name`.
    public func floats(_ name: String) throws -> [Float]? {
        try attribute(name, "floats") { if case .floats(let v) = $0 { v } else { nil } }
    }

    /// The ints attribute `name`.
    public func ints(_ name: String) throws -> [Int]? {
        try attribute(name, "ints") { if case .ints(let v) = $0 { v } else { nil } }
    }

    /// The strings attribute `name`.
    public func strings(_ name: String) throws -> [String]? {
        try attribute(name, "strings") { if case .strings(let v) = $0 { v } else { nil } }
    }

    /// The graph attribute `name` (a body of If, Loop or Scan).
    public func graph(_ name: String) throws -> ONNXGraph? {
        try attribute(name, "graph") { if case .graph(let v) = $0 { v } else { nil } }
    }

    /// The type attribute `name` (Optional's `type`).
    public func type(_ name: String) throws -> ValueForm? {
        try attribute(name, "type") { if case .type(let v) = $0 { v } else { nil } }
    }

    private func attribute<T>(_ name: String, _ kind: String, _ extract: (ONNXAttribute) -> T?) throws -> T? {
        guard let attribute = attributes[name] else { return nil }
        guard let value = extract(attribute) else {
            throw LayerKitError.invalidModel("\(label): attribute '\(name)' is \(attribute.kind), not \(kind)")
        }
        return value
    }
}
