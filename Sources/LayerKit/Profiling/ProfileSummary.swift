/// A profile's time accounted for: per layer, and the rest of the wall time
/// (uploads, downloads, recording, submit, waiting) so that the layers and
/// the overhead add up to the wall time exactly.
///
/// Each instant of the run is given to one span: a layer (a GPU kernel or a
/// CPU layer) before a transfer timed on the GPU, before the host's
/// packing or unpacking, before submitting, recording, waiting on the
/// fence, and the caller's whole `run`, in that order; an instant of a run
/// no other span covers is host work between the recorded steps (allocating
/// tensors and images, setting up), and one no span at all covers is
/// `unaccounted`. So a fence wait counts only where the GPU was doing none
/// of the recorded work. Record the whole run as a `.run` span to make the
/// wall time the caller's.
public struct ProfileSummary: Sendable {
    /// One op's time.
    public struct Layer: Sendable {
        /// The op (a layer's name), or the kernel's name when it ran outside any op.
        public let op: String
        /// Whether its work ran on the GPU (its kernels) or the CPU.
        public let onGPU: Bool
        /// Kernels dispatched or CPU evaluations.
        public let calls: Int
        public let nanoseconds: Double
        /// Bytes its kernels or evaluations read and wrote, when known.
        public let bytes: Int?
        /// The dispatches' workgroup size, when all agree.
        public let workgroupSize: [Int]?
    }

    /// A share of the wall time that no layer took.
    public struct Overhead: Sendable {
        public let label: String
        public let nanoseconds: Double
    }

    /// From the first span's start to the last one's end.
    public let wallNanoseconds: Double
    /// Ops in the order they first ran (`sortedByTime`: slowest first).
    public let layers: [Layer]
    /// Where the rest went, largest first; with `layers` it sums to `wallNanoseconds`.
    public let overhead: [Overhead]

    /// The layers' total.
    public var layerNanoseconds: Double { layers.reduce(0) { $0 + $1.nanoseconds } }

    /// A summary of these parts (`sortedByTime`, `byOpType`).
    init(wallNanoseconds: Double, layers: [Layer], overhead: [Overhead]) {
        (self.wallNanoseconds, self.layers, self.overhead) = (wallNanoseconds, layers, overhead)
    }

    /// Accounts for `spans` (see the type's description).
    public init(spans: [ProfileSpan]) {
        let start = spans.map(\.start).min() ?? 0
        wallNanoseconds = (spans.map(\.end).max() ?? 0) - start
        let owned = ProfileSummary.exclusiveTimes(spans)
        var layers: [Layer] = []
        var overheadTimes: [String: Double] = [:]
        for (span, time) in zip(spans, owned.perSpan) {
            guard span.kind == .kernel || span.kind == .cpuLayer else {
                overheadTimes[ProfileSummary.label(span), default: 0] += time
                continue
            }
            let op = span.op ?? span.name
            let onGPU = span.kind == .kernel
            if let i = layers.firstIndex(where: { $0.op == op && $0.onGPU == onGPU }) {
                let row = layers[i]
                let bytes = row.bytes.flatMap { total in span.bytes.map { total + $0 } }
                layers[i] = Layer(op: op, onGPU: onGPU, calls: row.calls + 1, nanoseconds: row.nanoseconds + time,
                                  bytes: bytes, workgroupSize: row.workgroupSize == span.workgroupSize ? span.workgroupSize : nil)
            } else {
                layers.append(Layer(op: op, onGPU: onGPU, calls: 1, nanoseconds: time, bytes: span.bytes,
                                    workgroupSize: span.workgroupSize))
            }
        }
        if owned.unaccounted > 0 { overheadTimes["unaccounted (between runs)", default: 0] += owned.unaccounted }
        self.layers = layers
        overhead = overheadTimes.map { Overhead(label: $0.key, nanoseconds: $0.value) }
            .sorted { $0.nanoseconds > $1.nanoseconds }
    }

    /// The overhead row a non-layer span counts under.
    static func label(_ span: ProfileSpan) -> String {
        switch span.kind {
        case .upload: span.timedOnGPU ? "upload: GPU copy into images" : "upload: host packing fp32 to fp16"
        case .download: span.timedOnGPU ? "download: GPU copy out of images" : "download: host unpacking fp16 to fp32"
        case .record: "recording commands (host)"
        case .submit: "submit (host)"
        case .wait: "fence wait while the GPU ran no recorded work"
        case .run: "host work between the recorded steps (allocations, setup)"
        case .kernel, .cpuLayer: span.name
        }
    }

    /// Lower ranks win an instant covered by several spans.
    static func rank(_ span: ProfileSpan) -> Int {
        switch span.kind {
        case .kernel, .cpuLayer: 0
        case .upload, .download: span.timedOnGPU ? 1 : 2
        case .submit: 3
        case .record: 4
        case .wait: 5
        case .run: 6
        }
    }

    /// Each span's share of the timeline under `rank` (ties to the earlier
    /// span), and the time no span covers.
    static func exclusiveTimes(_ spans: [ProfileSpan]) -> (perSpan: [Double], unaccounted: Double) {
        let bounds = Array(Set(spans.flatMap { [$0.start, $0.end] })).sorted()
        var owned = [Double](repeating: 0, count: spans.count)
        var unaccounted = 0.0
        for (low, high) in zip(bounds, bounds.dropFirst()) {
            let mid = (low + high) / 2
            let owner = spans.indices.filter { spans[$0].start <= mid && mid < spans[$0].end }
                .min { (rank(spans[$0]), $0) < (rank(spans[$1]), $1) }
            if let owner { owned[owner] += high - low } else { unaccounted += high - low }
        }
        return (owned, unaccounted)
    }
}
