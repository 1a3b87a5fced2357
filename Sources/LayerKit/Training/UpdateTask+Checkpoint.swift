import Foundation

extension UpdateTask {
    /// Writes a checkpoint (`TrainingCheckpoint`, atomically): the trainable
    /// parameters, the optimizer's state, BatchNormalization's running
    /// statistics, the position and the model's identity.
    public func writeCheckpoint(to url: URL) throws {
        let state = optimizer.exportState()
        var tensors: [String: Tensor] = [:]
        for (name, value) in pass.parameters { tensors["parameter/\(name)"] = value }
        for (name, value) in pass.runningStatistics { tensors["statistic/\(name)"] = value }
        for (name, value) in state.tensors { tensors["optimizer/\(name)"] = value }
        let settings = configuration.optimizer
        let checkpoint = TrainingCheckpoint(
            step: position.step, epoch: position.epoch, batchInEpoch: position.batch, seed: configuration.seed,
            optimizer: .init(name: settings.algorithm.rawValue, hyperParameters: settings.hyperParameters),
            schedule: settings.schedule.record(epoch: optimizer.epoch),
            model: .init(name: modelURL.lastPathComponent, contents: modelData), tensors: tensors,
            counters: state.integers, epochLossSum: position.lossSum)
        try checkpoint.write(to: url.path)
    }

    /// Continues from a checkpoint of this model taken by a task with the
    /// same trainable parameters and optimizer algorithm: its parameters,
    /// optimizer state, running statistics and position replace this task's
    /// (call before `run()`). This task's configuration applies from there
    /// on, so a resumed run may change the learning rate, the epochs or the
    /// schedule; run with the same ones, it equals the uninterrupted run bit
    /// for bit on the CPU. Throws, changing nothing, for a checkpoint of
    /// another model, other parameters, or another optimizer.
    public func resume(fromCheckpoint url: URL) throws {
        let checkpoint = try TrainingCheckpoint(contentsOf: url.path)
        try checkpoint.check(model: .init(name: modelURL.lastPathComponent, contents: modelData))
        let algorithm = configuration.optimizer.algorithm.rawValue
        guard checkpoint.optimizer.name == algorithm else {
            throw LayerKitError.invalidParameter("the checkpoint was made with the \(checkpoint.optimizer.name) optimizer; "
                                                 + "this run uses \(algorithm): resume with --optimizer \(checkpoint.optimizer.name)")
        }
        func group(_ prefix: String) -> [String: Tensor] {
            Dictionary(uniqueKeysWithValues: checkpoint.tensors.compactMap { key, value in
                key.hasPrefix(prefix) ? (String(key.dropFirst(prefix.count)), value) : nil
            })
        }
        let parameters = group("parameter/")
        guard parameters.keys.sorted() == pass.trainable else {
            throw LayerKitError.invalidParameter("the checkpoint trains \(TrainableSelection.list(parameters.keys.sorted())); "
                                                 + "this run trains \(TrainableSelection.list(pass.trainable))")
        }
        guard checkpoint.epoch <= configuration.epochs, checkpoint.batchInEpoch < batchesPerEpoch || checkpoint.batchInEpoch == 0 else {
            throw LayerKitError.invalidParameter("the checkpoint is at epoch \(checkpoint.epoch), batch \(checkpoint.batchInEpoch); "
                                                 + "this run has \(configuration.epochs) epochs of \(batchesPerEpoch) batches")
        }
        let state = OptimizerState(algorithm: configuration.optimizer.algorithm, tensors: group("optimizer/"),
                                   integers: checkpoint.counters)
        do { try optimizer.importState(state) } catch let error as LayerKitError {
            throw error.prefixed("checkpoint '\(url.path)': ")
        }
        try pass.update(parameters)
        try pass.restoreRunningStatistics(group("statistic/"))
        position = TrainingPosition(epoch: checkpoint.epoch, batch: checkpoint.batchInEpoch, step: checkpoint.step,
                                    lossSum: checkpoint.epochLossSum)
    }
}


extension OptimizerConfiguration {
    /// The hyper-parameters by PyTorch's names, as a checkpoint records them.
    var hyperParameters: [String: Double] {
        var values = ["lr": learningRate, "momentum": momentum, "dampening": dampening, "nesterov": nesterov ? 1 : 0,
                      "beta1": beta1, "beta2": beta2, "eps": epsilon, "weight_decay": weightDecay]
        if let maxGradientNorm { values["max_norm"] = maxGradientNorm }
        return values
    }
}

extension LearningRateSchedule {
    /// The schedule as a checkpoint records it: its kind, its settings and the epoch it is at.
    func record(epoch: Int) -> TrainingCheckpoint.Schedule {
        switch self {
        case .constant: return .init(name: "constant", state: ["epoch": Double(epoch)])
        case .step(let stepSize, let gamma):
            return .init(name: "step", state: ["epoch": Double(epoch), "step_size": Double(stepSize), "gamma": gamma])
        case .cosine(let maxEpochs, let minimum):
            return .init(name: "cosine", state: ["epoch": Double(epoch), "T_max": Double(maxEpochs), "eta_min": minimum])
        }
    }
}
