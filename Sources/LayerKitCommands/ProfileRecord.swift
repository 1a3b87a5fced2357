import LayerKit

/// What `layerkit profile --json` prints: the median run's per-layer table
/// and overhead as one JSON object (fields in Docs/JSON.md).
struct ProfileRecord: Encodable {
    let schema = "layerkit-profile/1"
    /// What was profiled: `Swish [defaults] shape 1x64x256x256` or `model PATH`.
    let subject: String
    let repeats: Int
    let warmup: Int
    let cpu: BenchRecord.CPU
    let device: BenchRecord.Device?
    /// The median run's wall time.
    let wallMs: Double
    let layers: [Layer]
    let overhead: [Overhead]
    /// The Chrome trace written, if any.
    let trace: String?

    struct Layer: Encodable {
        let op: String
        let backend: String
        let calls: Int
        let ms: Double
        let bytes: Int?
        let workgroupSize: [Int]?
    }

    struct Overhead: Encodable {
        let label: String
        let ms: Double
    }

    init(_ subject: String, backend: Backend, repeats: Int, warmup: Int, summary: ProfileSummary, trace: String?) {
        (self.subject, self.repeats, self.warmup, self.trace) = (subject, repeats, warmup, trace)
        cpu = .current
        device = BenchRecord.Device(backend.gpu)
        wallMs = summary.wallNanoseconds / 1e6
        layers = summary.layers.map {
            Layer(op: $0.op, backend: $0.onGPU ? "gpu" : "cpu", calls: $0.calls, ms: $0.nanoseconds / 1e6, bytes: $0.bytes,
                  workgroupSize: $0.workgroupSize)
        }
        overhead = summary.overhead.map { Overhead(label: $0.label, ms: $0.nanoseconds / 1e6) }
    }

    private enum CodingKeys: String, CodingKey {
        case schema, subject, repeats = "repeat", warmup, cpu, device, wallMs, layers, overhead, trace
    }
}
