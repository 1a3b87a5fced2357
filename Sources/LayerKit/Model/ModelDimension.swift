import LayerKitONNX

extension Model {
    /// One dimension of a model input's or output's shape, as the file gives it.
    public enum Dimension: Sendable, Hashable, CustomStringConvertible {
        /// A fixed size.
        case size(Int)
        /// A size named by a symbol ("N", "batch"), fixed by the tensor given
        /// to `predict`. A dimension the file leaves unnamed is the symbol "?".
        case symbol(String)

        /// The fixed size, or nil for a symbol.
        public var size: Int? {
            if case .size(let size) = self { return size }
            return nil
        }

        /// The size ("64") or the symbol ("N").
        public var description: String {
            switch self {
            case .size(let size): return String(size)
            case .symbol(let symbol): return symbol
            }
        }

        init(_ dimension: ONNXDimension) {
            switch dimension {
            case .value(let size): self = .size(size)
            case .symbol(let symbol): self = .symbol(symbol)
            case .unknown: self = .symbol("?")
            }
        }
    }
}
