/// One timed piece of a run: a kernel, a layer on the CPU, a transfer, or
/// the host's recording, submitting and waiting. Times are nanoseconds on
/// the recording `Profiler`'s host timeline (GPU spans are placed on it; see
/// `Profiler`).
public struct ProfileSpan: Sendable, Equatable {
    /// What the time was spent on.
    public enum Kind: String, Sendable, CaseIterable {
        /// A GPU dispatch, timed by GPU timestamps.
        case kernel
        /// A layer evaluated on the CPU.
        case cpuLayer = "cpu layer"
        /// Moving inputs to the device: the host's fp32 → fp16 packing and the GPU's copy.
        case upload
        /// Moving outputs back: the GPU's copy and the host's fp16 → fp32 unpacking.
        case download
        /// The host recording commands (barriers, descriptor sets, dispatches).
        case record
        /// The host ending and submitting the command buffer.
        case submit
        /// The host blocked on the fence until the GPU finishes.
        case wait
        /// A whole run as its caller times it (`Profiler.measure(.run, ...)`
        /// around `Backend.run` or a model's run): the wall time, enclosing the rest.
        case run

        /// The trace track spans of this kind go on.
        public var track: Track {
            switch self {
            case .kernel: .gpuKernels
            case .upload, .download: .transfers
            case .cpuLayer, .record, .submit, .wait, .run: .cpuWork
            }
        }
    }

    /// A lane of the timeline, as a trace viewer shows it.
    public enum Track: String, Sendable, CaseIterable {
        case gpuKernels = "GPU kernels"
        case cpuWork = "CPU work"
        case transfers = "transfers"
    }

    public let kind: Kind
    /// What ran: a pipeline name, a layer name or a step such as `submit`.
    public let name: String
    /// Nanoseconds from the profiler's origin.
    public let start: Double
    /// Nanoseconds.
    public let duration: Double
    /// Whether GPU timestamps timed it (else the host clock).
    public let timedOnGPU: Bool
    /// The op (layer name) the span belongs to, when it belongs to one.
    public var op: String?
    /// The shape of the tensor or image worked on (for a dispatch, its output).
    public var shape: [Int]?
    /// The dispatch's workgroup size (x, y, z).
    public var workgroupSize: [Int]?
    /// Bytes read plus bytes written.
    public var bytes: Int?

    /// Makes a span; `op`, `shape`, `workgroupSize` and `bytes` are optional details.
    public init(kind: Kind, name: String, start: Double, duration: Double, timedOnGPU: Bool = false,
                op: String? = nil, shape: [Int]? = nil, workgroupSize: [Int]? = nil, bytes: Int? = nil) {
        self.kind = kind
        self.name = name
        self.start = start
        self.duration = duration
        self.timedOnGPU = timedOnGPU
        self.op = op
        self.shape = shape
        self.workgroupSize = workgroupSize
        self.bytes = bytes
    }

    /// `start + duration`.
    public var end: Double { start + duration }
    /// The track the span goes on (`kind.track`).
    public var track: Track { kind.track }
}
