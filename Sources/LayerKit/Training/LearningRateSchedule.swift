import Foundation

/// How the learning rate changes from epoch to epoch, as PyTorch's
/// schedulers do when `scheduler.step()` is called once at the end of each
/// epoch (their usual use): during epoch `e` (0 for the first) every
/// optimizer step uses `learningRate(base:epoch: e)`. The epoch an
/// `Optimizer` is in advances with `Optimizer.finishEpoch()`, not with its
/// steps. Computed in closed form, in Double.
public enum LearningRateSchedule: Sendable, Equatable {
    /// The base learning rate throughout.
    case constant
    /// torch.optim.lr_scheduler.StepLR: `base * gamma^(e / stepSize)`
    /// (integer division): multiplied by `gamma` every `stepSize` epochs.
    case step(stepSize: Int, gamma: Double)
    /// torch.optim.lr_scheduler.CosineAnnealingLR with `T_max = maxEpochs`
    /// and `eta_min = minimum`:
    /// `minimum + (base - minimum) * (1 + cos(pi * e / maxEpochs)) / 2`,
    /// `minimum` at epoch `maxEpochs`; past it the cosine carries on and the
    /// rate rises again, as PyTorch's does.
    case cosine(maxEpochs: Int, minimum: Double)

    /// The learning rate of epoch `epoch` (0 for the first) from `base`.
    public func learningRate(base: Double, epoch: Int) -> Double {
        switch self {
        case .constant:
            return base
        case .step(let stepSize, let gamma):
            return base * pow(gamma, Double(epoch / stepSize))
        case .cosine(let maxEpochs, let minimum):
            return minimum + (base - minimum) * (1 + cos(Double.pi * Double(epoch) / Double(maxEpochs))) / 2
        }
    }

    /// Throws `LayerKitError.invalidParameter` for a step size or epoch
    /// count below 1, or a gamma or minimum that is negative or not finite.
    public func validate() throws {
        switch self {
        case .constant:
            break
        case .step(let stepSize, let gamma):
            guard stepSize >= 1 else { throw LayerKitError.invalidParameter("step schedule: step size \(stepSize), must be at least 1") }
            guard gamma.isFinite, gamma >= 0 else { throw LayerKitError.invalidParameter("step schedule: gamma \(gamma), must be finite and >= 0") }
        case .cosine(let maxEpochs, let minimum):
            guard maxEpochs >= 1 else { throw LayerKitError.invalidParameter("cosine schedule: \(maxEpochs) epochs, must be at least 1") }
            guard minimum.isFinite, minimum >= 0 else {
                throw LayerKitError.invalidParameter("cosine schedule: minimum learning rate \(minimum), must be finite and >= 0")
            }
        }
    }
}
