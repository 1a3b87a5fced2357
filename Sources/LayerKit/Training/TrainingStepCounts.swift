/// What one training step (forward, loss, backward, optimizer) cost beside
/// its arithmetic: its wall time and, on a backend with a GPU, the images
/// and buffers it created and the bytes it moved (`GPUCounts`). An
/// `UpdateTask` keeps its last step's in `lastStep`, set before the step's
/// `miniBatchEnded` event, so an event handler can report every step's.
/// `layerkit train --stats` prints them.
public struct TrainingStepCounts: Sendable, Equatable {
    /// The optimizer step, counted from 0 over the whole run.
    public let step: Int
    /// Its wall seconds.
    public let seconds: Double
    /// What it did on the GPU; nil when the backend has none.
    public let gpu: GPUCounts?
}
