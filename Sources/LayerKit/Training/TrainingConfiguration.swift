/// How an `UpdateTask` trains: the loss, the optimizer, the epochs and
/// mini-batches, the shuffling seed and which parameters change.
public struct TrainingConfiguration: Sendable {
    public var loss: Loss
    public var optimizer: OptimizerConfiguration
    public var epochs: Int
    public var batchSize: Int
    /// Seeds the order examples are visited in each epoch (`shuffles`).
    public var seed: UInt64
    /// Whether each epoch visits the examples in a seeded shuffled order
    /// (else in the provider's order).
    public var shuffles: Bool
    public var trainable: TrainableSelection

    public init(loss: Loss, optimizer: OptimizerConfiguration, epochs: Int = 1, batchSize: Int = 16,
                seed: UInt64 = 0, shuffles: Bool = true, trainable: TrainableSelection = .all) {
        self.loss = loss
        self.optimizer = optimizer
        self.epochs = epochs
        self.batchSize = batchSize
        self.seed = seed
        self.shuffles = shuffles
        self.trainable = trainable
    }

    /// Throws unless the counts are positive and at most
    /// `TrainingCount.maximum` (a run's step and epoch arithmetic stays far
    /// from overflow).
    func validate() throws {
        guard epochs >= 1 else { throw LayerKitError.invalidParameter("epochs must be at least 1, got \(epochs)") }
        guard batchSize >= 1 else { throw LayerKitError.invalidParameter("the batch size must be at least 1, got \(batchSize)") }
        try TrainingCount.check(epochs, "epochs", LayerKitError.invalidParameter)
        try TrainingCount.check(batchSize, "the batch size", LayerKitError.invalidParameter)
    }
}
