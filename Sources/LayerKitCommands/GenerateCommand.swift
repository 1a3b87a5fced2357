import Foundation
import LayerKit

/// `layerkit generate model.onnx --ids 1,2,3 --tokens N`: greedy generation
/// with a KV cache (`TokenGenerator`), ids in and ids out; prints the
/// generated ids and the prefill's and the decode's tokens per second, or
/// one `layerkit-generate/1` object with `--json`.
enum GenerateCommand {
    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, command: .generate)
        let threads = try arguments.threads()
        return try CPUThreads.with(threads) { try run(arguments, console: console) }
    }

    private static func run(_ arguments: Arguments, console: Console) throws -> Int32 {
        let path = try ModelFiles.modelPath(arguments)
        let prompt = try ids(try arguments.required("--ids"))
        let count = try arguments.count("--tokens", default: 16, minimum: 1)
        let units = try ValueParsing.backend(arguments.value("--backend") ?? "auto")
        let json = arguments.has("--json")
        let clock = ContinuousClock()
        let loading = clock.now
        let model = try ModelFiles.load(path, computeUnits: units, console: console)
        let generator = try TokenGenerator(model: model)
        let load = clock.now - loading
        try generator.layout.check(prompt)
        if !json { console.print(ModelFiles.deviceLine(model.backend)) }

        let progress = ProgressBar("generate", total: count, console: console)
        defer { progress.finish() }
        var start = clock.now
        var prefill = Duration.zero
        let generated = try generator.generate(after: prompt, count: count) { _, isPrefill in
            if isPrefill {
                prefill = clock.now - start
                start = clock.now
            }
            progress.advance()
        }
        progress.finish()
        let record = GenerateRecord(model: path, backend: model.backend, prompt: prompt, ids: generated,
                                    loadMs: Timing.milliseconds(load), prefillMs: Timing.milliseconds(prefill),
                                    decodeMs: Timing.milliseconds(clock.now - start))
        if json {
            console.print(try JSONText.line(record))
        } else {
            record.lines.forEach { console.print($0) }
        }
        return 0
    }

    /// `--ids 1,2,3`: token ids, whole numbers from 0, at most `ValueParsing.maximumCount` of them.
    static func ids(_ text: String) throws -> [Int64] {
        let words = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        guard words.count <= ValueParsing.maximumCount else {
            throw UsageError("--ids: \(words.count) ids; at most \(ValueParsing.maximumCount)")
        }
        return try words.map { word in
            guard let id = Int64(word), id >= 0 else {
                throw UsageError("--ids \(text): '\(word)' is not a token id (a whole number from 0, e.g. --ids 464,3290)")
            }
            return id
        }
    }
}
