// TrainBench: the wall time of one training step (forward, loss, backward,
// optimizer step) of an ONNX model through LayerKit's `UpdateTask`, on the
// CPU backend and/or the GPU one. Benchmarks/compare_training_torch.py runs it
// beside PyTorch on the same networks, weights and batches, and prints ratios.
//
//   swift run -c release TrainBench MODEL.onnx DATA.npy LABELS.npy [--batch N] [--steps N] [--warmup N]
//       [--trainable all|custom|last:N|NAME,...] [--loss ce|mse|l1|bce] [--optimizer sgd|adam|adamw] [--lr X]
//       [--threads N] [--backend cpu|gpu|both]
import LayerKitCommands
import Foundation
import LayerKit

/// One model on one backend: step-time statistics over the timed steps.
struct TrainRow: Codable {
    let model: String, backend: String, threads: Int?
    let batch: Int, steps: Int
    let stats: TimingStats
    /// The last step's loss (a check that both sides train the same thing).
    let finalLoss: Double
    /// Milliseconds per step in each kind of work, the largest first.
    let breakdown: [String]
    /// On the GPU: the first step's and the last timed step's allocations and bytes moved (`GPUCounts`).
    let gpuFirstStep: String?, gpuLastStep: String?
}

func trainable(_ word: String) -> TrainableSelection {
    switch word {
    case "all": return .all
    case "custom": return .customLayerWeights
    case _ where word.hasPrefix("last:"): return .lastLayers(Int(word.dropFirst(5)) ?? 0)
    default: return .named(word.split(separator: ",").map(String.init))
    }
}

do {
    var paths: [String] = []
    var batch = 16, steps = 20, warmup = 3, threads: Int?
    var selection = "all", loss = "ce", optimizer = "adam", lr = 0.01, backends = ["cpu"]
    var words = CommandLine.arguments.dropFirst().makeIterator()
    while let word = words.next() {
        switch word {
        case "--batch": batch = try ValueParsing.count(words.next() ?? "", option: word, minimum: 1)
        case "--steps": steps = try ValueParsing.count(words.next() ?? "", option: word, minimum: 1)
        case "--warmup": warmup = try ValueParsing.count(words.next() ?? "", option: word, minimum: 0)
        case "--threads": threads = try ValueParsing.count(words.next() ?? "", option: word, minimum: 1)
        case "--trainable": selection = words.next() ?? ""
        case "--loss": loss = words.next() ?? ""
        case "--optimizer": optimizer = words.next() ?? ""
        case "--lr": lr = Double(words.next() ?? "") ?? .nan
        case "--backend":
            let word = words.next() ?? ""
            backends = word == "both" ? ["cpu", "gpu"] : [word]
        default: paths.append(word)
        }
    }
    guard paths.count == 3, let lossKind = Loss(rawValue: loss),
          let algorithm = OptimizerConfiguration.Algorithm(rawValue: optimizer) else {
        throw LayerKitError.invalidParameter("usage: TrainBench MODEL.onnx DATA.npy LABELS.npy [options]; see the source")
    }
    let inputs = try Tensor(npyFile: paths[1])
    let targets = try Tensor(npyFile: paths[2])
    let data = try ArrayBatchProvider(inputs: inputs, targets: targets)
    let perEpoch = (data.count + batch - 1) / batch
    for backend in backends {
        let settings = OptimizerConfiguration(algorithm: algorithm, learningRate: lr)
        let configuration = TrainingConfiguration(loss: lossKind, optimizer: settings,
                                                  epochs: (warmup + steps + perEpoch - 1) / perEpoch, batchSize: batch,
                                                  seed: 1, shuffles: false, trainable: trainable(selection))
        let clock = ContinuousClock()
        var last = clock.now
        var samples: [Double] = []
        var finalLoss = Double.nan
        var gpuCounts: [GPUCounts] = []
        var task: UpdateTask?
        task = try UpdateTask(modelAt: URL(fileURLWithPath: paths[0]), data: data, configuration: configuration,
                              computeUnits: backend == "gpu" ? .gpu : .cpuOnly, threads: threads) { event in
            switch event {
            case .trainingBegan: last = clock.now
            case .miniBatchEnded(_, _, let loss):
                let now = clock.now
                samples.append(Timing.milliseconds(now - last))
                last = now
                finalLoss = loss
                if let counts = task?.lastStep?.gpu { gpuCounts.append(counts) }
                if samples.count == warmup + steps { task?.cancel() }
            default: break
            }
        }
        try task?.run()
        guard let stats = TimingStats(samples: Array(samples.dropFirst(warmup))) else { continue }
        let row = TrainRow(model: URL(fileURLWithPath: paths[0]).lastPathComponent, backend: backend, threads: threads,
                           batch: batch, steps: steps, stats: stats, finalLoss: finalLoss,
                           breakdown: (task?.workSeconds ?? [:]).sorted { $0.value > $1.value }.prefix(12).map {
                               String(format: "%.3f ms  %@", $0.value * 1e3 / Double(samples.count), $0.key.description)
                           },
                           gpuFirstStep: gpuCounts.first?.description, gpuLastStep: gpuCounts.last?.description)
        print(String(decoding: try JSONEncoder().encode(row), as: UTF8.self))
    }
} catch {
    FileHandle.standardError.write(Data("TrainBench: \(error)\n".utf8))
    exit(1)
}
