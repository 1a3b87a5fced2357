extension ProfileSummary {
    /// The op type of a layer row: `Conv` for a model node's `conv1 (Conv)`
    /// (`custom.Swish` for a custom domain's), the row's name itself for a
    /// single layer or a kernel that ran outside any node.
    public static func opType(of layer: Layer) -> String {
        guard layer.op.hasSuffix(")"), let open = layer.op.range(of: " (", options: .backwards) else { return layer.op }
        return String(layer.op[open.upperBound..<layer.op.index(before: layer.op.endIndex)])
    }

    /// The same profile with its layer rows slowest first (ties in the order they ran).
    public func sortedByTime() -> ProfileSummary {
        let order = layers.enumerated().sorted {
            $0.element.nanoseconds > $1.element.nanoseconds
                || ($0.element.nanoseconds == $1.element.nanoseconds && $0.offset < $1.offset)
        }
        return ProfileSummary(wallNanoseconds: wallNanoseconds, layers: order.map(\.element), overhead: overhead)
    }

    /// The same profile with one row per op type and backend (`opType(of:)`):
    /// calls, times and bytes summed, slowest first; the wall time and
    /// overhead unchanged.
    public func byOpType() -> ProfileSummary {
        var rows: [Layer] = []
        for layer in layers {
            let type = ProfileSummary.opType(of: layer)
            if let i = rows.firstIndex(where: { $0.op == type && $0.onGPU == layer.onGPU }) {
                let row = rows[i]
                rows[i] = Layer(op: type, onGPU: layer.onGPU, calls: row.calls + layer.calls,
                                nanoseconds: row.nanoseconds + layer.nanoseconds,
                                bytes: row.bytes.flatMap { total in layer.bytes.map { total + $0 } },
                                workgroupSize: row.workgroupSize == layer.workgroupSize ? layer.workgroupSize : nil)
            } else {
                rows.append(Layer(op: type, onGPU: layer.onGPU, calls: layer.calls, nanoseconds: layer.nanoseconds,
                                  bytes: layer.bytes, workgroupSize: layer.workgroupSize))
            }
        }
        return ProfileSummary(wallNanoseconds: wallNanoseconds, layers: rows, overhead: overhead).sortedByTime()
    }
}
