import LayerKit

/// One timed quantity of `layerkit bench`: a row of its table and an entry
/// of its `--json` record's `results` (the fields are documented in Docs/JSON.md).
struct BenchMeasurement: Encodable {
    /// `cpu` or `gpu`.
    let backend: String
    /// `kernel`, `endToEnd`, `endToEndTimestampsOff`, `uploadCopy` or `downloadCopy`.
    let measure: String
    let stats: TimingStats
    /// Tensor elements per run.
    let elements: Int
    /// Bytes read plus written per run.
    let bytes: Int

    /// Summarizes `samples` (milliseconds); nil when there are none.
    init?(_ backend: String, _ measure: String, samples: [Double], elements: Int, bytes: Int) {
        guard let stats = TimingStats(samples: samples) else { return nil }
        (self.backend, self.measure, self.stats, self.elements, self.bytes) = (backend, measure, stats, elements, bytes)
    }

    /// `elements` / median time.
    var elementsPerSecond: Double { Double(elements) / (stats.medianMs * 1e-3) }
    /// `bytes` / median time, in 1e9 bytes per second.
    var gigabytesPerSecond: Double { Double(bytes) / (stats.medianMs * 1e-3) / 1e9 }

    /// The row in BenchmarkSupport's table.
    var row: BenchRow {
        let labels = ["kernel": "kernel", "endToEnd": "end to end", "endToEndTimestampsOff": "end to end, timestamps off",
                      "uploadCopy": "upload: GPU copy", "downloadCopy": "download: GPU copy"]
        return BenchRow(name: "\(backend) \(labels[measure] ?? measure)",
                        threads: backend == "cpu" ? CPUEvaluator().threadCount : 0,
                        stats: stats, elements: elements, bytes: bytes)
    }

    private enum Keys: String, CodingKey {
        case backend, measure, runs, medianMs, minMs, p90Ms, elements, bytes, elementsPerSecond, gigabytesPerSecond
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(backend, forKey: .backend)
        try c.encode(measure, forKey: .measure)
        try c.encode(stats.runs, forKey: .runs)
        try c.encode(stats.medianMs, forKey: .medianMs)
        try c.encode(stats.minMs, forKey: .minMs)
        try c.encode(stats.p90Ms, forKey: .p90Ms)
        try c.encode(elements, forKey: .elements)
        try c.encode(bytes, forKey: .bytes)
        try c.encode(elementsPerSecond, forKey: .elementsPerSecond)
        try c.encode(gigabytesPerSecond, forKey: .gigabytesPerSecond)
    }
}
