import Foundation
import Testing
@testable import LayerKit

/// LayerKit's optimizers against PyTorch's own, run in float64 by
/// Scripts/generate_optimizer_references.py (the fixture
/// Fixtures/Training/optimizers/optimizers.json): every parameter after each
/// of 8 steps, the final state, the learning rate and clipped norm of each
/// step, and the schedulers' rates over 12 epochs.
struct OptimizerReferenceTests {
    static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/Training/optimizers/optimizers.json")

    /// The fixture, read at each use (a `[String: Any]` cannot be a shared static).
    static var document: [String: Any] {
        guard let data = try? Data(contentsOf: url),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [:] }
        return object
    }

    static var cases: [[String: Any]] { document["cases"] as? [[String: Any]] ?? [] }
    static var caseNames: [String] { cases.compactMap { $0["name"] as? String } }

    static func doubles(_ value: Any?) -> [Double] { (value as? [NSNumber])?.map(\.doubleValue) ?? [] }

    static func schedule(_ s: [String: Any]) -> LearningRateSchedule {
        switch s["kind"] as? String {
        case "step": .step(stepSize: (s["step_size"] as! NSNumber).intValue, gamma: (s["gamma"] as! NSNumber).doubleValue)
        case "cosine": .cosine(maxEpochs: (s["t_max"] as! NSNumber).intValue, minimum: (s["eta_min"] as! NSNumber).doubleValue)
        default: .constant
        }
    }

    static func configuration(_ c: [String: Any]) -> OptimizerConfiguration {
        let number = { (key: String) in (c[key] as! NSNumber).doubleValue }
        return OptimizerConfiguration(
            algorithm: OptimizerConfiguration.Algorithm(rawValue: c["algorithm"] as! String)!,
            learningRate: number("lr"), momentum: number("momentum"), dampening: number("dampening"),
            nesterov: (c["nesterov"] as! NSNumber).boolValue, beta1: number("beta1"), beta2: number("beta2"),
            epsilon: number("eps"), weightDecay: number("weight_decay"),
            maxGradientNorm: (c["max_norm"] as? NSNumber)?.doubleValue, schedule: schedule(c["schedule"] as! [String: Any]))
    }

    @Test func theFixtureIsThere() {
        #expect(Self.caseNames.count == 9, "\(Self.url.path) is missing or unreadable")
    }

    @Test(arguments: caseNames)
    func matchesPyTorch(_ name: String) throws {
        let spec = try #require(Self.cases.first { $0["name"] as? String == name })
        let config = spec["config"] as! [String: Any]
        let optimizer = try Optimizer(Self.configuration(config))
        let stepsPerEpoch = (config["steps_per_epoch"] as! NSNumber).intValue
        var parameters: [String: Tensor] = [:]
        for (key, value) in spec["parameters"] as! [String: [String: Any]] {
            let shape = (value["shape"] as! [NSNumber]).map(\.intValue)
            parameters[key] = try Tensor(shape: shape, values: Self.doubles(value["values"]).map { Float($0) })
        }
        let gradients = spec["gradients"] as! [[String: Any]]
        let after = spec["after"] as! [[String: Any]]
        let lrs = Self.doubles(spec["lrs"])
        let norms = spec["norms"] as! [Any]
        var worst = 0.0
        for step in gradients.indices {
            if step > 0, step % stepsPerEpoch == 0 { optimizer.finishEpoch() }
            #expect(abs(optimizer.learningRate - lrs[step]) <= 1e-15 * lrs[step], "\(name) step \(step) learning rate")
            var stepGradients: [String: Tensor] = [:]
            for (key, parameter) in parameters {
                stepGradients[key] = try Tensor(shape: parameter.shape,
                                                values: Self.doubles(gradients[step][key]).map { Float($0) })
            }
            parameters = try optimizer.step(parameters: parameters, gradients: stepGradients)
            if let norm = (norms[step] as? NSNumber)?.doubleValue {
                #expect(abs(try #require(optimizer.lastGradientNorm) - norm) <= 1e-12 * norm)
            }
            for (key, parameter) in parameters {
                for (i, expected) in Self.doubles(after[step][key]).enumerated() {
                    let error = abs(Double(parameter[i]) - expected)
                    worst = max(worst, error / max(1, abs(expected)))
                    #expect(error <= 1e-6 * max(1, abs(expected)), "\(name) step \(step) \(key)[\(i)]: \(parameter[i]) vs \(expected)")
                }
            }
        }
        let state = optimizer.exportState()
        for (key, value) in spec["state"] as! [String: Any] {
            let tensor = try #require(state.tensors[key], "\(name): no \(key) in the state")
            for (i, expected) in Self.doubles(value).enumerated() {
                #expect(abs(Double(tensor[i]) - expected) <= 1e-6 * max(1, abs(expected)), "\(name) \(key)[\(i)]")
            }
        }
        #expect(state.tensors.count == (spec["state"] as! [String: Any]).count)
        for (key, steps) in spec["steps"] as! [String: NSNumber] { #expect(state.integers["\(key).step"] == steps.intValue) }
        #expect(worst > 0, "float32 against float64 cannot be exact everywhere: is the comparison running?")
    }

    @Test func schedulesMatchPyTorchsSchedulers() throws {
        let schedules = try #require(Self.document["schedules"] as? [[String: Any]])
        #expect(schedules.count == 4)
        for spec in schedules {
            let schedule = Self.schedule(spec)
            let base = (spec["base"] as! NSNumber).doubleValue
            for (epoch, expected) in Self.doubles(spec["lrs"]).enumerated() {
                let rate = schedule.learningRate(base: base, epoch: epoch)
                #expect(abs(rate - expected) <= 1e-12 * base, "\(schedule) epoch \(epoch): \(rate) vs \(expected)")
            }
        }
    }
}
