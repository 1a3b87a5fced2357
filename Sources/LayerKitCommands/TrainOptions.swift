import LayerKit

/// What `layerkit train`'s options ask for, every value checked before any
/// file is read: each mistake is a usage error (exit status 2) naming the option.
///
/// An updatable Core ML model's update parameters (`defaults`,
/// `TrainingConfiguration(updatableModelAt:)`) stand in for the options not
/// given: its loss, what trains, its optimizer and the optimizer's
/// parameters, the epochs, the mini-batch size, the seed and shuffling.
struct TrainOptions {
    let configuration: TrainingConfiguration

    /// Checks every option's value before any file is read (a missing
    /// `--loss` or `--trainable` may still come from the model's file).
    static func check(_ arguments: Arguments) throws {
        _ = try TrainOptions(arguments, defaults: TrainingConfiguration(
            loss: .meanSquaredError, optimizer: .sgd(learningRate: 0.01), trainable: .all))
    }

    init(_ arguments: Arguments, defaults: TrainingConfiguration? = nil) throws {
        guard let loss = try arguments.value("--loss").map(Self.loss) ?? defaults?.loss else {
            throw UsageError("missing --loss")
        }
        guard let trainable = try arguments.value("--trainable").map(Self.trainable) ?? defaults?.trainable else {
            throw UsageError("missing --trainable")
        }
        let base = defaults?.optimizer
        let algorithm = try arguments.value("--optimizer").map(Self.algorithm) ?? base?.algorithm ?? .sgd
        // The model's own optimizer parameters hold for the same algorithm.
        let inherited = base?.algorithm == algorithm ? base : nil
        let epochs = try arguments.count("--epochs", default: defaults?.epochs ?? 5, minimum: 1)
        var optimizer = OptimizerConfiguration(
            algorithm: algorithm,
            learningRate: try arguments.value("--lr").map {
                try Self.number($0, option: "--lr", allowing: .positive)
            } ?? inherited?.learningRate ?? 0.01,
            weightDecay: try arguments.value("--weight-decay").map {
                try Self.number($0, option: "--weight-decay", allowing: .nonNegative)
            },
            maxGradientNorm: try arguments.value("--clip-norm").map {
                try Self.number($0, option: "--clip-norm", allowing: .positive)
            },
            schedule: try Self.schedule(arguments.value("--schedule") ?? "constant", epochs: epochs))
        if let inherited {
            (optimizer.momentum, optimizer.beta1, optimizer.beta2, optimizer.epsilon) =
                (inherited.momentum, inherited.beta1, inherited.beta2, inherited.epsilon)
        }
        if let text = arguments.value("--momentum") {
            guard algorithm == .sgd else { throw UsageError("--momentum is SGD's: drop it or use --optimizer sgd") }
            optimizer.momentum = try Self.number(text, option: "--momentum", allowing: .belowOne)
        }
        if arguments.has("--nesterov") {
            guard algorithm == .sgd, optimizer.momentum > 0 else {
                throw UsageError("--nesterov needs SGD with momentum: add --momentum M (e.g. 0.9)")
            }
            optimizer.nesterov = true
        }
        try ValueParsing.onCommandLine { try optimizer.validate() }
        configuration = TrainingConfiguration(
            loss: loss, optimizer: optimizer, epochs: epochs,
            batchSize: try arguments.count("--batch", default: defaults?.batchSize ?? 16, minimum: 1),
            seed: try arguments.value("--seed").map(ValueParsing.seed) ?? defaults?.seed ?? 0,
            shuffles: defaults?.shuffles ?? true, trainable: trainable)
    }

    /// A loss by its `--loss` name (`Loss`'s raw values: ce, mse, l1, bce, ce-probabilities).
    static func loss(_ text: String) throws -> Loss {
        guard let loss = Loss(rawValue: text.lowercased()) else {
            throw UsageError("--loss \(text): expected ce (cross-entropy from logits), mse, l1, bce (binary "
                             + "cross-entropy with logits) or ce-probabilities (cross-entropy after a softmax)")
        }
        return loss
    }

    /// `sgd`, `adam` or `adamw`.
    static func algorithm(_ text: String) throws -> OptimizerConfiguration.Algorithm {
        guard let algorithm = OptimizerConfiguration.Algorithm(rawValue: text.lowercased()) else {
            throw UsageError("--optimizer \(text): expected sgd, adam or adamw")
        }
        return algorithm
    }

    /// `all` (every parameter), `custom` (every custom layer's weights),
    /// `last:N` (the last N layers with parameters) or names joined by commas.
    static func trainable(_ text: String) throws -> TrainableSelection {
        if text.lowercased() == "all" { return .all }
        if text.lowercased() == "custom" { return .customLayerWeights }
        if text.lowercased().hasPrefix("last:") {
            return .lastLayers(try ValueParsing.count(String(text.dropFirst(5)), option: "--trainable last:N",
                                                      minimum: 1))
        }
        let names = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        guard !names.contains(where: \.isEmpty) else {
            throw UsageError("--trainable \(text): expected NAME[,NAME...] (initializer names), all, custom or last:N")
        }
        guard Set(names).count == names.count else { throw UsageError("--trainable \(text): a name is given twice") }
        return .named(names)
    }

    /// `constant`, `cosine` (from the rate to 0 over the run's `epochs`, as
    /// PyTorch's CosineAnnealingLR with T_max = epochs), or
    /// `step:EPOCHS,FACTOR` (the rate times FACTOR every EPOCHS epochs, StepLR).
    static func schedule(_ text: String, epochs: Int) throws -> LearningRateSchedule {
        let syntax = "expected constant, cosine or step:EPOCHS,FACTOR (e.g. step:10,0.5)"
        switch text.lowercased() {
        case "constant": return .constant
        case "cosine": return .cosine(maxEpochs: epochs, minimum: 0)
        case let word where word.hasPrefix("step:"):
            let parts = word.dropFirst(5).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, let every = Int(parts[0]), (1...ValueParsing.maximumCount).contains(every),
                  let factor = Double(parts[1]), factor.isFinite, factor > 0 else {
                throw UsageError("--schedule \(text): \(syntax), EPOCHS a whole number from 1 to "
                                 + "\(ValueParsing.maximumCount) and FACTOR a finite number above 0")
            }
            return .step(stepSize: every, gamma: factor)
        default:
            throw UsageError("--schedule \(text): \(syntax)")
        }
    }

    /// Which numbers an option takes.
    enum Allowed {
        case positive, nonNegative, belowOne

        var text: String {
            switch self {
            case .positive: "a finite number above 0"
            case .nonNegative: "a finite number, 0 or more"
            case .belowOne: "a number from 0 to below 1"
            }
        }

        func contains(_ value: Double) -> Bool {
            guard value.isFinite else { return false }
            switch self {
            case .positive: return value > 0
            case .nonNegative: return value >= 0
            case .belowOne: return value >= 0 && value < 1
            }
        }
    }

    /// `text` as a number the option allows.
    static func number(_ text: String, option: String, allowing allowed: Allowed) throws -> Double {
        guard let value = Double(text.trimmingCharacters(in: .whitespaces)), allowed.contains(value) else {
            throw UsageError("\(option) \(text): expected \(allowed.text)")
        }
        return value
    }
}
