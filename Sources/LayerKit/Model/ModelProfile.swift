/// Where the time of one model run went: one span per layer, transfer and
/// GPU submission, on one clock (nanoseconds from the start of the run).
///
/// GPU spans come from GPU timestamps (scaled by `timestampPeriod`), placed
/// on the host clock at the submission that ran them; CPU spans from the
/// host clock. Between them they show why per-layer times do not add up to
/// the wall time: recording, submit, wait and transfers are spans too.
public struct ModelProfile: Sendable {
    /// What a span measured.
    public enum Kind: String, Sendable {
        /// A layer's kernels on the GPU (GPU timestamps).
        case gpuLayer
        /// A layer evaluated on the CPU (host clock).
        case cpuLayer
        /// Uploads into slice images (GPU timestamps: the copies).
        case upload
        /// Downloads from slice images (GPU copies and the host's widening).
        case download
        /// Encoding GPU work into a command buffer (host clock).
        case record
        /// Submitting a command buffer (host clock).
        case submit
        /// Waiting for the GPU (host clock).
        case wait
    }

    /// One measured interval.
    public struct Span: Sendable {
        public let kind: Kind
        /// The node's name, or what was moved.
        public let name: String
        /// The node's op type ("" for transfers and submissions).
        public let op: String
        public let startNanoseconds: Double
        public let durationNanoseconds: Double
        /// The step's output shape (layers) or the tensor moved (transfers).
        public let shape: [Int]
        /// Bytes the span read and wrote (layers: input and output Float32
        /// elements × 4 on the CPU, fp16 texels × 8 on the GPU; transfers:
        /// the bytes crossing).
        public let bytes: Int
    }

    /// The spans, in the order they happened.
    public internal(set) var spans: [Span] = []
    /// The whole run, from the first input to the last output on the host.
    public internal(set) var wallNanoseconds: Double = 0

    /// The spans of layers (GPU or CPU), in run order.
    public var layerSpans: [Span] { spans.filter { $0.kind == .gpuLayer || $0.kind == .cpuLayer } }
}
