/// Push-constant bytes built from plain values, in declaration order, the
/// way Kompute passes push constants: `var p = PushConstants(); p.append(UInt32(w))`.
/// Only 4-byte scalars are accepted, so std430 offsets match append order.
public struct PushConstants: Sendable {
    /// The packed bytes.
    public private(set) var bytes: [UInt8] = []

    public init() {}

    /// The bytes of `value` as they lie in memory: a struct of 4-byte
    /// scalars (and 16-byte-aligned 4-vectors) declared in the block's order
    /// has the block's std430 layout.
    public init<T: BitwiseCopyable>(of value: T) { appendBytes(of: value) }

    /// Appends a 32-bit unsigned integer (GLSL `uint`).
    public mutating func append(_ value: UInt32) { appendBytes(of: value) }
    /// Appends a 32-bit signed integer (GLSL `int`).
    public mutating func append(_ value: Int32) { appendBytes(of: value) }
    /// Appends a 32-bit float (GLSL `float`).
    public mutating func append(_ value: Float) { appendBytes(of: value) }

    private mutating func appendBytes<T>(of value: T) {
        withUnsafeBytes(of: value) { bytes.append(contentsOf: $0) }
    }
}
