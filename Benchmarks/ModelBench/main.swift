// ModelBench: whole ONNX models, end to end (input tensor in, outputs out),
// on the CPU backend and the GPU backend, with a per-layer breakdown from
// profiled runs. Benchmarks/compare_models_onnxruntime.py runs it beside
// onnxruntime on the same models and prints the ratios.
//
//   swift run -c release ModelBench MODEL.onnx... [--repeat N] [--warmup N] [--json]
import BenchmarkSupport
import LayerKitCommands
import Foundation
import LayerKit

/// One model on one backend: end-to-end timings and each layer's median.
struct ModelRow: Codable {
    struct LayerTime: Codable {
        /// `node (OpType)`.
        let name: String, ranOn: String, medianMs: Double
    }
    let model: String, backend: String, device: String
    /// Whether the GPU is a CPU emulation (lavapipe): its times are no GPU speed.
    let emulated: Bool
    let stats: TimingStats
    let layers: [LayerTime]
    let loading: LoadTimes
}

func bench(_ path: String, units: ComputeUnits, context: GPUContext?, runs: Int, warmup: Int) throws -> ModelRow? {
    let backend = try Backend(computeUnits: units, context: context)
    if units != .cpuOnly, backend.gpu == nil { return nil }
    let url = URL(fileURLWithPath: path)
    // The first load on this backend is cold (it compiles the shaders).
    let coldStart = ContinuousClock.now
    let model = try Model(contentsOf: url, backend: backend)
    let coldLoad = ContinuousClock.now - coldStart
    // Seeded uniform [0, 1) inputs of the model's shapes (symbolic sizes 1).
    var generator = SeededGenerator(seed: 1)
    var inputs: [String: Tensor] = [:]
    for input in model.inputs {
        let shape = input.shapeWithSymbolsAsOne
        inputs[input.name] = try Tensor(shape: shape,
                                        values: (0..<shape.reduce(1, *)).map { _ in Float.random(in: 0..<1, using: &generator) })
    }
    let firstStart = ContinuousClock.now
    _ = try model.predict(inputs: inputs)
    let loading = try loadTimes(cold: (coldLoad, ContinuousClock.now - firstStart), loads: 5, inputs: inputs) {
        try Model(contentsOf: url, backend: backend)
    }
    let samples = try Timing.measure(warmup: warmup, runs: runs) { _ = try model.predict(inputs: inputs) }
    // Per layer: medians over profiled runs (GPU timestamps on).
    var perLayer: [String: [Double]] = [:]
    var order: [(String, String)] = []
    for run in 0..<max(5, runs / 4) {
        let profiler = Profiler()
        _ = try model.predict(inputs: inputs, profiler: profiler)
        for layer in ProfileSummary(spans: profiler.spans).layers {
            if run == 0 { order.append((layer.op, layer.onGPU ? "GPU" : "CPU")) }
            perLayer[layer.op, default: []].append(layer.nanoseconds / 1e6)
        }
    }
    let layers = order.map { name, ranOn in
        ModelRow.LayerTime(name: name, ranOn: ranOn, medianMs: TimingStats(samples: perLayer[name] ?? [])?.medianMs ?? 0)
    }
    guard let stats = TimingStats(samples: samples) else { return nil }
    let device = backend.gpu.map { "\($0.deviceInfo.name) (\($0.deviceInfo.kind.rawValue))" } ?? "CPU"
    return ModelRow(model: url.lastPathComponent, backend: units == .cpuOnly ? "cpu" : "gpu",
                    device: device, emulated: backend.gpu?.deviceInfo.kind == .cpu, stats: stats, layers: layers,
                    loading: loading)
}

do {
    var paths: [String] = []
    var runs = 50, warmup = 5, json = false
    var words = CommandLine.arguments.dropFirst().makeIterator()
    while let word = words.next() {
        switch word {
        case "--repeat": runs = try ValueParsing.count(words.next() ?? "", option: word, minimum: 1)
        case "--warmup": warmup = try ValueParsing.count(words.next() ?? "", option: word, minimum: 0)
        case "--json": json = true
        default: paths.append(word)
        }
    }
    guard !paths.isEmpty else { throw LayerKitError.invalidParameter("usage: ModelBench MODEL.onnx... [--repeat N] [--warmup N] [--json]") }
    let (context, note) = benchmarkGPUContext()
    if !json { print(note) }
    for path in paths {
        for units in [ComputeUnits.cpuOnly, .gpu] {
            guard let row = try bench(path, units: units, context: context, runs: runs, warmup: warmup) else { continue }
            if json {
                print(String(decoding: try JSONEncoder().encode(row), as: UTF8.self))
            } else {
                print(String(format: "%@ on %@: median %.3f ms (min %.3f, p90 %.3f)", row.model, row.backend,
                             row.stats.medianMs, row.stats.minMs, row.stats.p90Ms))
                print(String(format: "  load %.3f ms, first predict %.3f ms (medians of 5); first load of the process "
                             + "%.3f ms, its first predict %.3f ms", row.loading.loadMs, row.loading.firstPredictMs,
                             row.loading.coldLoadMs, row.loading.coldFirstPredictMs))
                for layer in row.layers {
                    print(String(format: "  %-44@ %@ %.3f ms", layer.name, layer.ranOn, layer.medianMs))
                }
            }
        }
    }
} catch {
    FileHandle.standardError.write(Data("ModelBench: \(error)\n".utf8))
    exit(1)
}
