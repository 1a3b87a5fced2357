import Foundation
import LayerKit

/// What `layerkit generate` found (fields of `--json` in Docs/JSON.md).
struct GenerateRecord: Encodable {
    let schema = "layerkit-generate/1"
    let model: String
    let cpu: BenchRecord.CPU
    let device: BenchRecord.Device?
    let prompt: [Int64]
    /// The generated ids, in order.
    let ids: [Int64]
    /// The model's load (read, imported, planned where its inputs allow), in ms.
    let loadMs: Double
    /// The prompt's run with an empty cache, which chose the first id.
    let prefill: Phase
    /// The runs of one id each that chose the others (none when one id was asked for).
    let decode: Phase

    /// A phase's tokens (run), wall time and tokens per second.
    struct Phase: Encodable {
        let tokens: Int
        let ms: Double
        let tokensPerSecond: Double?

        init(tokens: Int, ms: Double) {
            (self.tokens, self.ms) = (tokens, ms)
            tokensPerSecond = tokens > 0 && ms > 0 ? Double(tokens) * 1000 / ms : nil
        }

        /// `5 tokens in 3.21 ms (1558.0 tokens/s)`.
        var text: String {
            "\(tokens) token\(tokens == 1 ? "" : "s") in " + String(format: "%.2f", ms) + " ms"
                + (tokensPerSecond.map { " (" + String(format: "%.1f", $0) + " tokens/s)" } ?? "")
        }
    }

    init(model: String, backend: Backend, prompt: [Int64], ids: [Int64], loadMs: Double, prefillMs: Double,
         decodeMs: Double) {
        (self.model, self.prompt, self.ids, self.loadMs) = (model, prompt, ids, loadMs)
        cpu = .current
        device = BenchRecord.Device(backend.gpu)
        prefill = Phase(tokens: prompt.count, ms: prefillMs)
        decode = Phase(tokens: max(0, ids.count - 1), ms: decodeMs)
    }

    /// The text output: the ids, the load's time, then each phase's speed.
    var lines: [String] {
        ["ids: " + ids.map(String.init).joined(separator: ","),
         "load: " + String(format: "%.2f", loadMs) + " ms",
         "prefill: " + prefill.text,
         "decode: " + decode.text]
    }
}
