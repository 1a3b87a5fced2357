/// A GPU timestamp: the mark's label and its time in nanoseconds from the
/// command buffer's first mark.
public struct GPUTimestamp: Sendable, Equatable {
    /// The label given to `GPUCommandBuffer.timestamp(_:)`.
    public let label: String
    /// Nanoseconds since the buffer's first mark.
    public let nanoseconds: Double

    /// A timestamp of `label` at `nanoseconds`.
    public init(label: String, nanoseconds: Double) {
        self.label = label
        self.nanoseconds = nanoseconds
    }
}
