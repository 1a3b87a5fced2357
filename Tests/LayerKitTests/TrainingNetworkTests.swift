import Foundation
import LayerKitONNX
import Testing
@testable import LayerKit

/// Whole small networks trained by LayerKit against PyTorch float64 autograd
/// (Tests/LayerKitTests/Fixtures/Training, written by
/// Scripts/generate_training_references.py): gradients of every parameter,
/// BatchNormalization's running statistics, 20 Adam steps, and the GPU
/// against the CPU.
@Suite struct TrainingNetworkTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/Training")

    static func fixture(_ name: String) throws -> Tensor { try Tensor(npyFile: directory.appendingPathComponent(name).path) }
    static func model(_ name: String) throws -> ONNXModel { try ONNXModel(contentsOf: directory.appendingPathComponent(name)) }

    /// max |a - b| / max(1, max |b|): the measure for gradients.
    static func relativeError(_ a: Tensor, _ b: Tensor) -> Double {
        var worst = 0.0, scale = 1.0
        for i in 0..<b.count {
            worst = max(worst, abs(Double(a[i]) - Double(b[i])))
            scale = max(scale, abs(Double(b[i])))
        }
        return worst / scale
    }

    static func pass(_ net: String, backend: Backend, selection: TrainableSelection = .all) throws -> TrainingPass {
        try TrainingPass(model: model("\(net).onnx"), registry: .shared, backend: backend, loss: .crossEntropy,
                         selection: selection, batchSize: 4)
    }

    static let cpu: Backend = try! Backend(computeUnits: .cpuOnly)

    @Test(arguments: ["swish_net", "bn_net"])
    func gradientsMatchPyTorchFloat64(net: String) throws {
        let pass = try Self.pass(net, backend: Self.cpu)
        let (loss, gradients) = try pass.lossAndGradients(input: Self.fixture("x.npy"), target: Self.fixture("labels.npy"))
        let reference = try Self.fixture("\(net).loss.npy")[0]
        #expect(abs(loss - Double(reference)) <= 1e-5 * max(1, abs(Double(reference))), "loss \(loss) vs \(reference)")
        #expect(Set(gradients.keys) == Set(pass.trainable))
        for name in pass.trainable {
            let expected = try Self.fixture("\(net).grad.\(name).npy")
            let error = Self.relativeError(try #require(gradients[name]), expected)
            print("\(net) d(loss)/d(\(name)): error \(error) against PyTorch float64")
            #expect(error <= 1e-5, "\(net) d(loss)/d(\(name)): error \(error)")
        }
    }
}

extension TrainingNetworkTests {
    /// The 20 Adam steps of the fixture: losses collected from the task's events.
    static func adamLosses(backend: Backend) throws -> (losses: [Double], task: UpdateTask) {
        let data = try ArrayBatchProvider(inputs: fixture("adam_x.npy"), targets: fixture("adam_labels.npy"))
        let configuration = TrainingConfiguration(loss: .crossEntropy, optimizer: .adam(learningRate: 0.01), epochs: 5,
                                                  batchSize: 4, shuffles: false, trainable: .all)
        var losses: [Double] = []
        let task = try UpdateTask(modelAt: directory.appendingPathComponent("swish_net.onnx"), data: data,
                                  configuration: configuration, backend: backend) { event in
            if case .miniBatchEnded(_, _, let loss) = event { losses.append(loss) }
        }
        try task.run()
        return (losses, task)
    }

    @Test func twentyAdamStepsFollowPyTorch() throws {
        let (losses, task) = try Self.adamLosses(backend: Self.cpu)
        let reference = try Self.fixture("adam_losses.npy")
        #expect(losses.count == 20)
        let worst = zip(losses, (0..<reference.count).map { Double(reference[$0]) }).map { abs($0 - $1) }.max() ?? .nan
        print("20 Adam steps: largest loss difference from PyTorch float64 \(worst)")
        for (step, loss) in losses.enumerated() {
            #expect(abs(loss - Double(reference[step])) <= 1e-5, "step \(step): \(loss) vs \(reference[step])")
        }
        for name in task.trainableNames {
            let error = Self.relativeError(try #require(task.parameters[name]), try Self.fixture("adam_final.\(name).npy"))
            #expect(error <= 1e-5, "\(name) after 20 steps: error \(error)")
        }
    }

    @Test func twentyAdamStepsOnTheGPUFollowTheCPU() throws {
        guard TestGPU.isEnabled else { return }
        let gpu = try Backend(computeUnits: .gpu, context: TestGPU.get(), timestamps: false, notice: { _ in })
        let (cpuLosses, _) = try Self.adamLosses(backend: Self.cpu)
        let (gpuLosses, task) = try Self.adamLosses(backend: gpu)
        print("20 Adam steps: largest GPU-CPU loss difference \(zip(gpuLosses, cpuLosses).map { abs($0 - $1) }.max() ?? .nan)")
        for (step, (g, c)) in zip(gpuLosses, cpuLosses).enumerated() {
            #expect(abs(g - c) <= 1e-3, "step \(step): GPU \(g), CPU \(c)")
        }
        #expect(task.placementReport.contains { $0.placement == .gpu && $0.op == "optimizer" })
        #expect(task.placementReport.contains { $0.placement == .gpu && $0.op.hasPrefix("swish") })
        // The same GPU run twice gives the same bits.
        let (again, _) = try Self.adamLosses(backend: gpu)
        #expect(again.map(\.bitPattern) == gpuLosses.map(\.bitPattern))
    }

    @Test func batchNormalizationRunningStatisticsFollowPyTorch() throws {
        let pass = try Self.pass("bn_net", backend: Self.cpu)
        _ = try pass.lossAndGradients(input: Self.fixture("x.npy"), target: Self.fixture("labels.npy"))
        for (name, file) in [("bn.running_mean", "bn_net.running_mean.npy"), ("bn.running_var", "bn_net.running_var.npy")] {
            let error = Self.relativeError(try #require(pass.runningStatistics[name]), try Self.fixture(file))
            #expect(error <= 1e-6, "\(name): error \(error)")
        }
    }

    @Test(arguments: ["swish_net", "bn_net"])
    func gpuGradientsFollowTheCPU(net: String) throws {
        guard TestGPU.isEnabled else { return }
        let gpu = try Backend(computeUnits: .gpu, context: TestGPU.get(), timestamps: false, notice: { _ in })
        // The CPU reads the input the GPU holds: fp16-rounded.
        let x = try Self.fixture("x.npy").roundedToHalf(), labels = try Self.fixture("labels.npy")
        let (_, cpu) = try Self.pass(net, backend: Self.cpu).lossAndGradients(input: x, target: labels)
        let twinPass = try Self.pass(net, backend: Self.cpu)
        twinPass.roundsValuesToHalf = true
        let (_, twin) = try twinPass.lossAndGradients(input: x, target: labels)
        let gpuPass = try Self.pass(net, backend: gpu)
        let (_, first) = try gpuPass.lossAndGradients(input: x, target: labels)
        let (_, second) = try Self.pass(net, backend: gpu).lossAndGradients(input: x, target: labels)
        for (name, reference) in cpu {
            let g = try #require(first[name])
            let error = Self.relativeError(g, reference)
            let twinError = Self.relativeError(try #require(twin[name]), reference)
            print("\(net) \(name): GPU error \(error), fp16 twin \(twinError)")
            #expect(error <= max(1e-3, 2 * twinError), "\(net) GPU d(loss)/d(\(name)): error \(error), fp16 twin \(twinError)")
            #expect(g.values.map(\.bitPattern) == second[name]?.values.map(\.bitPattern), "\(name): two GPU runs differ")
        }
        #expect(gpuPass.runner.placements.contains { $0.placement == .gpu })
    }
}
