import Foundation
import LayerKit

/// What `layerkit train` shows while it trains, from the task's events: a
/// progress bar over the mini-batches on a terminal (`ProgressBar`, on
/// standard error) and one line per epoch on standard output (not with
/// `--json`), with `--stats` one line per step, and the losses kept for the
/// plot and the JSON.
final class TrainingLog {
    private let epochs: Int
    private let console: Console
    private let label: String
    private let printsEpochs: Bool
    private var progress: ProgressBar?
    /// Every epoch's mini-batch losses and mean, in order.
    private(set) var history: [LossPlot.Epoch] = []
    /// With `--stats`: the step just ended's counts, printed as a line after each mini-batch.
    var stepCounts: (() -> TrainingStepCounts?)?

    /// A log of a run of `epochs` epochs, its bar labelled `label`; `printsEpochs`: a line per epoch.
    init(epochs: Int, console: Console, label: String, printsEpochs: Bool) {
        (self.epochs, self.console, self.label, self.printsEpochs) = (epochs, console, label, printsEpochs)
    }

    /// Shows `event`.
    func record(_ event: TrainingEvent) {
        switch event {
        case .trainingBegan(let steps):
            progress = ProgressBar(label, total: steps, console: console)
        case .miniBatchEnded(let epoch, _, let loss):
            if history.last?.number != epoch + 1 { history.append(LossPlot.Epoch(number: epoch + 1, batchLosses: [], mean: loss)) }
            history[history.count - 1].batchLosses.append(loss)
            if let step = stepCounts?() {
                progress?.finish()
                console.print(Self.line(step))
            }
            progress?.advance()
        case .epochEnded(let epoch, let loss, let seconds):
            if history.last?.number == epoch + 1 {
                history[history.count - 1].mean = loss
                history[history.count - 1].seconds = seconds
            }
            progress?.finish()
            if printsEpochs { console.print(Self.line(epoch: epoch + 1, of: epochs, loss: loss, seconds: seconds)) }
        case .completed:
            progress?.finish()
        }
    }

    /// Erases the bar (the run ended or failed).
    func finish() { progress?.finish() }

    /// `epoch 3/5  loss 0.1234  1.23 s`: the loss to 4 significant digits.
    static func line(epoch: Int, of epochs: Int, loss: Double, seconds: Double) -> String {
        "epoch \(epoch)/\(epochs)  loss \(lossText(loss))  " + String(format: "%.2f s", seconds)
    }

    /// `step 2  41.20 ms  GPU: 0 allocations (0 images, 0 buffers), 1.20 MB up, 0.40 MB down`
    /// (steps counted from 1; no GPU part without a GPU).
    static func line(_ step: TrainingStepCounts) -> String {
        "step \(step.step + 1)  " + String(format: "%.2f ms", step.seconds * 1e3) + (step.gpu.map { "  GPU: \($0)" } ?? "")
    }

    /// `0.1234`, `2.303`, `1.234e-05`: 4 significant digits.
    static func lossText(_ loss: Double) -> String { String(format: "%.4g", loss) }
}
