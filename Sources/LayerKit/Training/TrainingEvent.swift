/// What an `UpdateTask` reports while it trains, as Core ML's
/// `MLUpdateProgressEvent`s do: training began, each mini-batch ended, each
/// epoch ended, training completed. Epochs and batches count from 0.
public enum TrainingEvent: Sendable, Equatable {
    /// Before the first mini-batch: the optimizer steps the run will take in all.
    case trainingBegan(steps: Int)
    /// After a mini-batch's optimizer step: its loss (before the step).
    case miniBatchEnded(epoch: Int, batch: Int, loss: Double)
    /// After an epoch's last mini-batch: the mean of its mini-batch losses and its wall time.
    case epochEnded(epoch: Int, loss: Double, seconds: Double)
    /// After the last epoch, or when `cancel()` stopped the run (`cancelled`).
    case completed(cancelled: Bool)
}
