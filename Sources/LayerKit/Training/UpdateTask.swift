import Foundation
import LayerKitONNX
import Synchronization

/// Trains a model's parameters on examples, as Core ML's `MLUpdateTask`
/// updates a model on the device: mini-batches in a seeded order, the
/// forward pass, the loss, the backward pass and the optimizer step, epoch
/// after epoch, with events; then the updated model is written as ONNX
/// (frozen initializers byte for byte as they were), or for a Core ML
/// model as an `.mlmodel` (`init(updatableModelAt:data:)` trains one as
/// its update parameters say). A checkpoint holds the
/// parameters, the optimizer's state and the position; a task resumed from
/// it continues exactly where the checkpoint was taken (bit for bit on the
/// CPU).
///
/// `run()` trains on the calling thread; `cancel()` may be called from any
/// thread (or from an event) and stops the run after the current mini-batch.
public final class UpdateTask: @unchecked Sendable {
    public let configuration: TrainingConfiguration
    /// The backend the passes run on.
    public let backend: Backend
    let modelURL: URL
    /// The model file's bytes as loaded: a checkpoint names the model by them.
    let modelData: Data
    private let data: TrainingBatchProvider
    private let events: (TrainingEvent) -> Void
    let pass: TrainingPass
    let optimizer: Optimizer
    private let cancelled = Atomic<Bool>(false)
    /// Where the run is: the next epoch and mini-batch within it, optimizer
    /// steps taken, and the sum of the current epoch's losses so far.
    var position = TrainingPosition()

    /// Prepares training `modelAt`'s parameters chosen by
    /// `configuration.trainable` on `data`. Throws for a model that cannot
    /// be trained as asked (a node without a backward pass between a
    /// trainable parameter and the loss, an unknown trainable name), and for
    /// examples that do not fit the model's input. `computeUnits` picks the
    /// backend unless `backend` shares one; `threads` caps the CPU threads of
    /// the backend the task makes (nil: one per core the process may use).
    public init(modelAt url: URL, data: TrainingBatchProvider, configuration: TrainingConfiguration,
                computeUnits: ComputeUnits = .cpuOnly, backend: Backend? = nil, threads: Int? = nil,
                registry: LayerRegistry = .shared, events: @escaping (TrainingEvent) -> Void = { _ in }) throws {
        try configuration.validate()
        guard data.count > 0 else { throw LayerKitError.invalidParameter("the training data holds no examples") }
        modelURL = url
        modelData = try RegularFile.contents(url.path)
        let model = try Self.trainingModel(at: url, data: modelData)
        self.data = data
        self.configuration = configuration
        self.events = events
        if backend != nil, threads != nil {
            throw LayerKitError.invalidParameter("threads sets the thread count of the backend a task makes; "
                                                 + "a shared backend has its own (Backend(threads:))")
        }
        // No GPU timestamps: a training run reports losses and step times, not per-kernel spans.
        self.backend = try backend ?? Backend(computeUnits: computeUnits, timestamps: false, threads: threads)
        pass = try TrainingPass(model: model, registry: registry, backend: self.backend, loss: configuration.loss,
                                selection: configuration.trainable, batchSize: min(configuration.batchSize, data.count))
        let example = try data.features(at: 0)
        guard example.input.shape == pass.exampleShape else {
            throw LayerKitError.shapeMismatch("an example's input has shape \(Tensor.describe(example.input.shape)); the "
                                              + "model takes examples of shape \(Tensor.describe(pass.exampleShape))")
        }
        optimizer = try Optimizer(configuration.optimizer, backend: self.backend)
        // Bounded like every restored count, so that step counting cannot overflow (`TrainingCount`).
        let (steps, overflow) = configuration.epochs.multipliedReportingOverflow(by: batchesPerEpoch)
        guard !overflow, steps <= TrainingCount.maximum else {
            throw LayerKitError.invalidParameter("\(configuration.epochs) epochs of \(batchesPerEpoch) batches are more "
                                                 + "than \(TrainingCount.maximum) (2^53) steps")
        }
    }

    /// Prepares training an updatable Core ML model (`.mlmodel`, Core ML 3)
    /// as its file says, as `MLUpdateTask` does with no parameters given:
    /// the loss layer, the optimizer and its parameters, the mini-batch
    /// size, the epochs and shuffling from `updateParams`, the weights of
    /// its `isUpdatable` layers trained (`TrainingConfiguration(updatableModelAt:)`).
    /// `writeModel(to:)` then writes an `.mlmodel`.
    public convenience init(updatableModelAt url: URL, data: TrainingBatchProvider, computeUnits: ComputeUnits = .cpuOnly,
                            backend: Backend? = nil, threads: Int? = nil, registry: LayerRegistry = .shared,
                            events: @escaping (TrainingEvent) -> Void = { _ in }) throws {
        try self.init(modelAt: url, data: data, configuration: try TrainingConfiguration(updatableModelAt: url),
                      computeUnits: computeUnits, backend: backend, threads: threads, registry: registry, events: events)
    }

    /// The model a task trains: an ONNX file as it is (with its external
    /// data); a Core ML file translated (`CoreMLModel`), its one output the
    /// loss layer's input when the file has update parameters.
    static func trainingModel(at url: URL, data: Data) throws -> ONNXModel {
        let name = url.lastPathComponent
        guard ModelFileFormat.of(data, name: name) == .coreML else { return try ONNXModel(contentsOf: url) }
        let model = try CoreMLModel(data: data, source: name)
        return model.updateParameters == nil ? try model.onnxModel() : try model.trainingSetup().model
    }

    /// The initializers training updates, sorted.
    public var trainableNames: [String] { pass.trainable }

    /// The trainable parameters' current values, by initializer name.
    public var parameters: [String: Tensor] { pass.parameters }

    /// Where each kind of work of the training run went, in first-run
    /// order: every step's forward and backward work, the loss and the
    /// optimizer step, each once.
    public var placementReport: [TrainingWork] { pass.runner.placements }

    /// The wall seconds spent so far in each kind of work of `placementReport`.
    public var workSeconds: [TrainingWork: Double] { pass.runner.seconds }

    /// The last step's time and GPU counts (nil before the first step).
    public private(set) var lastStep: TrainingStepCounts?

    /// Optimizer steps a full run takes: epochs times mini-batches per epoch.
    public var totalSteps: Int { configuration.epochs * batchesPerEpoch }

    var batchesPerEpoch: Int { (data.count + configuration.batchSize - 1) / configuration.batchSize }

    /// Stops a running `run()` after its current mini-batch.
    public func cancel() { cancelled.store(true, ordering: .relaxed) }

    /// Trains until the last epoch ends or `cancel()` is called. A NaN or
    /// infinite loss stops the run with an error naming the step; the
    /// parameters then stay as they were before that step.
    public func run() throws {
        cancelled.store(false, ordering: .relaxed)
        events(.trainingBegan(steps: totalSteps - position.step))
        while position.epoch < configuration.epochs {
            let epochStart = Date()
            let order = configuration.shuffles
                ? shuffledOrder(count: data.count, seed: configuration.seed, epoch: position.epoch) : Array(0..<data.count)
            while position.batch < batchesPerEpoch {
                if cancelled.load(ordering: .relaxed) {
                    events(.completed(cancelled: true))
                    return
                }
                let loss = try trainingStep(order: order)
                position.lossSum += loss
                events(.miniBatchEnded(epoch: position.epoch, batch: position.batch, loss: loss))
                position.batch += 1
                position.step += 1
            }
            events(.epochEnded(epoch: position.epoch, loss: position.lossSum / Double(batchesPerEpoch),
                               seconds: Date().timeIntervalSince(epochStart)))
            position.epoch += 1
            position.batch = 0
            position.lossSum = 0
            optimizer.finishEpoch()
        }
        events(.completed(cancelled: false))
    }

    /// One mini-batch: forward, loss, backward and the optimizer step; returns
    /// the loss. Any failure is named by the step, and leaves the parameters
    /// as they were before it (the loss is not finite: a NaN in the data, or
    /// a learning rate that diverged).
    private func trainingStep(order: [Int]) throws -> Double {
        let (clock, before) = (ContinuousClock.now, backend.gpu?.counts)
        defer {
            lastStep = TrainingStepCounts(step: position.step, seconds: (ContinuousClock.now - clock).inSeconds,
                                          gpu: before.flatMap { before in backend.gpu.map { $0.counts - before } })
        }
        do {
            let start = position.batch * configuration.batchSize
            let batch = try data.batch(order[start..<min(start + configuration.batchSize, data.count)])
            // The backend's thread count covers the CPU work done outside its
            // layer runs too (the backward kernels, the loss, the optimizer).
            return try CPUThreads.with(backend.threads) {
                let (loss, gradients) = try pass.lossAndGradients(input: batch.input, target: batch.target)
                pass.runner.currentOp = "optimizer"
                let stepStart = ContinuousClock.now
                let updated = try optimizer.step(parameters: pass.parameters, gradients: gradients)
                try pass.update(updated, device: optimizer.deviceParameters)
                pass.runner.record("\(configuration.optimizer.algorithm.rawValue) step", optimizer.placement,
                                   since: stepStart)
                return loss
            }
        } catch let error as LayerKitError {
            throw error.prefixed("step \(position.step) (epoch \(position.epoch), batch \(position.batch)): ")
        }
    }

    /// The model's prediction for `input` (a batch) with the current parameters.
    public func predict(_ input: Tensor) throws -> Tensor {
        try CPUThreads.with(backend.threads) { try pass.predict(input) }
    }

    /// Writes the model with the trained parameters (and updated running
    /// statistics) in place of their initializers; every other byte of the
    /// file is copied. Refuses to overwrite the model being trained. A Core
    /// ML model is written as a `.mlmodel` (`UpdatedModelFile`).
    public func writeModel(to url: URL) throws {
        try UpdatedModelFile.write(pass.parameters.merging(pass.runningStatistics) { parameter, _ in parameter },
                                   intoCopyOf: modelURL.path, to: url.path)
    }
}

/// Where a training run is; a checkpoint stores it.
struct TrainingPosition: Equatable {
    var epoch = 0
    var batch = 0
    var step = 0
    var lossSum = 0.0
}
