import Foundation
import LayerKitONNX

extension TrainingConfiguration {
    /// coremltools' defaults (`SgdParams`, `AdamParams`, `set_epochs`,
    /// `make_updatable`'s shuffle) for what an updatable model's file leaves out.
    public static let coreMLDefaults = (learningRate: 0.01, miniBatchSize: 10, momentum: 0.0, beta1: 0.9,
                                        beta2: 0.999, epsilon: 1e-8, epochs: 1, shuffle: true)

    /// The configuration an updatable Core ML model (`.mlmodel`, Core ML 3)
    /// gives in its file, as `MLUpdateTask` takes it when no parameter is
    /// overridden: its loss layer (categorical cross-entropy: `.crossEntropy`
    /// from the softmax's logits, which is exact, or `.crossEntropyFromProbabilities`
    /// of a softmax of rank-4 blobs; mean squared error: `.meanSquaredError`,
    /// the mean over every element), its optimizer (SGD with momentum, or
    /// Adam with beta1, beta2 and eps, as PyTorch formulates them), the
    /// learning rate, the mini-batch size, the epochs, shuffling and its
    /// seed (`updateParams`; coremltools' defaults, `coreMLDefaults`, for a
    /// value the file leaves out), and, as what trains, the weights of its
    /// `isUpdatable` layers whose `WeightParams` are updatable.
    ///
    /// Throws `LayerKitError.invalidParameter` for an ONNX model (which
    /// holds no training configuration) and for a Core ML model that is not
    /// updatable, naming what is missing.
    public init(updatableModelAt url: URL) throws {
        let data = try RegularFile.contents(url.path)
        let name = url.lastPathComponent
        guard ModelFileFormat.of(data, name: name) == .coreML else {
            throw LayerKitError.invalidParameter("\(name) is an ONNX model, which holds no training configuration: "
                                                 + "give one (a loss, an optimizer, what trains)")
        }
        try self.init(coreML: try CoreMLModel(data: data, source: name).trainingSetup())
    }

    /// The configuration `setup` (an updatable Core ML model's) describes.
    public init(coreML setup: CoreMLTrainingSetup) throws {
        let defaults = Self.coreMLDefaults
        let loss: Loss = switch setup.loss {
        case .softmaxCrossEntropy: .crossEntropy
        case .crossEntropy: .crossEntropyFromProbabilities
        case .meanSquaredError: .meanSquaredError
        }
        let optimizer: OptimizerConfiguration, batch: Int?
        switch setup.parameters.optimizer {
        case .sgd(let learningRate, let miniBatchSize, let momentum):
            optimizer = .sgd(learningRate: learningRate ?? defaults.learningRate, momentum: momentum ?? defaults.momentum)
            batch = miniBatchSize
        case .adam(let learningRate, let miniBatchSize, let beta1, let beta2, let epsilon):
            optimizer = .adam(learningRate: learningRate ?? defaults.learningRate, beta1: beta1 ?? defaults.beta1,
                              beta2: beta2 ?? defaults.beta2, epsilon: epsilon ?? defaults.epsilon)
            batch = miniBatchSize
        case nil:
            throw LayerKitError.invalidParameter("the Core ML model's update parameters name no optimizer "
                                                 + "(sgdOptimizer, adamOptimizer)")
        }
        let seed = setup.parameters.seed ?? 0
        self.init(loss: loss, optimizer: optimizer, epochs: setup.parameters.epochs ?? defaults.epochs,
                  batchSize: batch ?? defaults.miniBatchSize, seed: UInt64(bitPattern: Int64(seed)),
                  shuffles: setup.parameters.shuffle ?? defaults.shuffle, trainable: .named(setup.updatable))
        do {
            try validate()
            try optimizer.validate()
        } catch let error as LayerKitError {
            throw error.prefixed("the Core ML model's update parameters: ")
        }
    }
}
