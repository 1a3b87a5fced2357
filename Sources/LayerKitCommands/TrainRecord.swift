import LayerKit

/// What `layerkit train --json` prints (fields in Docs/JSON.md).
struct TrainRecord: Encodable {
    let schema = "layerkit-train/1"
    let model: String
    /// The files written: the updated model, and the checkpoint and plot when asked for.
    let output: String
    let checkpoint: String?
    let plot: String?
    let resumedFrom: String?
    let cpu: BenchRecord.CPU
    let items: Int
    let trainable: [String]
    let settings: Settings
    let epochs: [Epoch]
    let placement: [Place]

    struct Settings: Encodable {
        let loss: String
        let optimizer: String
        let learningRate: Double
        let epochs: Int
        let batch: Int
        let seed: UInt64
    }

    struct Epoch: Encodable {
        let epoch: Int
        let loss: Double
        let seconds: Double
        let batchLosses: [Double]
    }

    /// One line of the placement summary: a backward op's work and where it ran.
    struct Place: Encodable {
        let op: String
        let work: String
        /// `cpu` or `gpu`.
        let placement: String
        let cpuReason: String?
    }

    init(model: String, output: String, checkpoint: String?, plot: String?, resumedFrom: String?, items: Int,
         trainable: [String], configuration: TrainingConfiguration, log: TrainingLog,
         report: [TrainingWork]) {
        (self.model, self.output, self.checkpoint, self.plot, self.resumedFrom) = (model, output, checkpoint, plot, resumedFrom)
        (self.items, self.trainable) = (items, trainable)
        cpu = .current
        settings = Settings(loss: configuration.loss.rawValue, optimizer: configuration.optimizer.algorithm.rawValue,
                            learningRate: configuration.optimizer.learningRate, epochs: configuration.epochs,
                            batch: configuration.batchSize, seed: configuration.seed)
        epochs = log.history.map { Epoch(epoch: $0.number, loss: $0.mean, seconds: $0.seconds, batchLosses: $0.batchLosses) }
        placement = report.map { row in
            switch row.placement {
            case .gpu: Place(op: row.op, work: row.work, placement: "gpu", cpuReason: nil)
            case .cpu(let reason): Place(op: row.op, work: row.work, placement: "cpu", cpuReason: reason)
            }
        }
    }
}
