import Foundation
import Testing
@testable import LayerKit

/// The optimizer's GPU step (optimizer.comp) against its CPU twin, for
/// every algorithm: within 1e-6 relative at every step, the same bits on a
/// rerun, and where each ran.
struct OptimizerGPUTests {
    static func gpuBackend() throws -> Backend {
        try Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in })
    }

    /// Parameters of 1, 7 and 70001 elements: the last spans three rows of
    /// a dispatch (32768 elements each) and ends mid-workgroup.
    static let shapes: [String: [Int]] = ["scalar": [1], "bias": [7], "weights": [7, 10001]]

    /// The values, drawn once (a debug build draws 70000 slowly).
    static let initialValues = shapes.mapValues { shape in
        seededUniform(count: shape.reduce(1, *), in: -1...1, seed: UInt64(shape.reduce(1, *)))
    }
    static let gradientValues = (0..<6).map { step in
        shapes.mapValues { shape in
            seededUniform(count: shape.reduce(1, *), in: -0.5...0.5, seed: UInt64(7 * shape.reduce(1, *) + step))
        }
    }

    static func tensors(_ values: [String: [Float]]) throws -> [String: Tensor] {
        var tensors: [String: Tensor] = [:]
        for (name, values) in values { tensors[name] = try Tensor(shape: shapes[name]!, values: values) }
        return tensors
    }

    static func parameters() throws -> [String: Tensor] { try tensors(initialValues) }
    static func gradients(step: Int) throws -> [String: Tensor] { try tensors(gradientValues[step]) }

    /// Six steps of `optimizer`; the parameters after each.
    static func run(_ optimizer: Optimizer) throws -> [[String: [Float]]] {
        var parameters = try Self.parameters()
        var trace: [[String: [Float]]] = []
        for step in 0..<6 {
            parameters = try optimizer.step(parameters: parameters, gradients: Self.gradients(step: step))
            if step == 2 { optimizer.finishEpoch() }
            trace.append(parameters.mapValues(\.values))
        }
        return trace
    }

    static let configurations: [OptimizerConfiguration] = {
        var cosine = OptimizerConfiguration.adamW(learningRate: 0.02, weightDecay: 0.05)
        cosine.schedule = .cosine(maxEpochs: 3, minimum: 0.001)
        cosine.maxGradientNorm = 10
        return [
            .sgd(learningRate: 0.1),
            .sgd(learningRate: 0.05, momentum: 0.9, dampening: 0.1, weightDecay: 0.01),
            .sgd(learningRate: 0.05, momentum: 0.8, nesterov: true, weightDecay: 0.001),
            .adam(learningRate: 0.01, weightDecay: 0.01),
            .adam(learningRate: 0.02, beta1: 0.3, beta2: 0.9),
            cosine,
        ]
    }()

    @Test(.enabled(if: TestGPU.isEnabled), arguments: configurations.indices)
    func theGPUStepMatchesItsCPUTwin(_ index: Int) throws {
        let configuration = Self.configurations[index]
        let gpu = try Optimizer(configuration, backend: Self.gpuBackend())
        #expect(gpu.placement == .gpu)
        let cpu = try Optimizer(configuration, backend: Backend(computeUnits: .cpuOnly))
        #expect(cpu.placement == .cpu(reason: nil))
        let onGPU = try Self.run(gpu)
        let onCPU = try Self.run(cpu)
        var worst = 0.0, differing = 0, total = 0
        for (g, c) in zip(onGPU, onCPU) {
            for name in g.keys {
                for (a, b) in zip(g[name]!, c[name]!) {
                    let relative = Double(abs(a - b)) / max(Double(abs(b)), 1e-30)
                    worst = max(worst, relative)
                    differing += a.bitPattern == b.bitPattern ? 0 : 1
                    total += 1
                }
            }
        }
        #expect(worst <= 1e-6, "\(configuration.algorithm) #\(index): GPU vs CPU \(worst) relative, \(differing) of \(total) differ")
        // The same run again on a fresh optimizer: the same bits.
        let again = try Self.run(Optimizer(configuration, backend: Self.gpuBackend()))
        #expect(again.map { $0.mapValues { $0.map(\.bitPattern) } } == onGPU.map { $0.mapValues { $0.map(\.bitPattern) } })
        // And the state the GPU left matches the CPU's.
        let (gs, cs) = (gpu.exportState(), cpu.exportState())
        #expect(gs.integers == cs.integers)
        #expect(Set(gs.tensors.keys) == Set(cs.tensors.keys))
        var worstState = 0.0
        for (key, tensor) in gs.tensors {
            guard let twin = cs.tensors[key] else { continue }
            for i in 0..<tensor.count {
                worstState = max(worstState, Double(abs(tensor[i] - twin[i])) / max(Double(abs(twin[i])), 1e-30))
            }
        }
        #expect(worstState <= 1e-6, "\(configuration.algorithm) #\(index): GPU vs CPU state \(worstState) relative")
    }

    /// The moments and the parameters stay in the GPU's buffers between
    /// steps: a step after the first, given what the last one returned,
    /// copies in the gradients and reads back the parameters only; given
    /// other parameters (changed by the caller) it copies them in too, and
    /// steps from them as the CPU twin does. `exportState()` reads the
    /// moments back (the CPU twin's, within 1e-6), and an optimizer that
    /// imports them steps to the same bits as the one that kept them.
    @Test(.enabled(if: TestGPU.isEnabled))
    func theMomentsStayOnTheGPUBetweenSteps() throws {
        let context = try GPUContext(device: TestGPU.get().device)
        let backend = try Backend(computeUnits: .gpu, context: context, notice: { _ in })
        let (gpu, cpu) = (try Optimizer(.adam(learningRate: 0.01), backend: backend), try Optimizer(.adam(learningRate: 0.01)))
        let bytes = 4 * Self.shapes.values.map { $0.reduce(1, *) }.reduce(0, +)
        var (onGPU, onCPU) = (try Self.parameters(), try Self.parameters())
        for step in 0..<3 {
            let before = context.counts
            onGPU = try gpu.step(parameters: onGPU, gradients: Self.gradients(step: step))
            onCPU = try cpu.step(parameters: onCPU, gradients: Self.gradients(step: step))
            let moved = context.counts - before
            // The first step also fills the four new buffers with zeros, and copies the moments in and out.
            if step > 0 { #expect(moved.bytesUploaded == bytes && moved.bytesDownloaded == bytes, "step \(step): \(moved)") }
        }
        // The caller changes one element (a checkpoint restored, say): the parameters go up again.
        for parameters in [onGPU, onCPU] { parameters["bias"]![3] = 0.25 }
        let changed = context.counts
        onGPU = try gpu.step(parameters: onGPU, gradients: Self.gradients(step: 4))
        onCPU = try cpu.step(parameters: onCPU, gradients: Self.gradients(step: 4))
        let moved = context.counts - changed
        #expect(moved.bytesUploaded == 2 * bytes && moved.bytesDownloaded == bytes, "\(moved)")
        for (name, tensor) in onGPU {
            let reference = try #require(onCPU[name])
            let worst = (0..<tensor.count).map { Double(abs(tensor[$0] - reference[$0])) / max(Double(abs(reference[$0])), 1e-30) }.max() ?? 0
            #expect(worst <= 1e-6, "\(name) after the change: GPU vs CPU \(worst) relative")
        }
        let before = context.counts
        let state = gpu.exportState()
        #expect((context.counts - before).bytesDownloaded == 2 * bytes)
        let twin = cpu.exportState()
        #expect(Set(state.tensors.keys) == Set(twin.tensors.keys) && state.integers == twin.integers)
        for (key, tensor) in state.tensors {
            let reference = try #require(twin.tensors[key])
            let worst = (0..<tensor.count).map { Double(abs(tensor[$0] - reference[$0])) / max(Double(abs(reference[$0])), 1e-30) }.max() ?? 0
            #expect(worst <= 1e-6, "\(key): GPU vs CPU \(worst) relative")
        }
        let resumed = try Optimizer(.adam(learningRate: 0.01), backend: backend)
        try resumed.importState(state)
        let kept = try gpu.step(parameters: onGPU, gradients: Self.gradients(step: 5))
        let imported = try resumed.step(parameters: onGPU, gradients: Self.gradients(step: 5))
        #expect(kept.mapValues { $0.values.map(\.bitPattern) } == imported.mapValues { $0.values.map(\.bitPattern) })
    }

    /// `.automatic` on lavapipe runs the step on the CPU and says why, once;
    /// with no backend it is the CPU without a reason.
    @Test(.enabled(if: TestGPU.isEnabled))
    func theCPUStepIsAnnouncedWhenTheGPUWasAllowed() throws {
        let context = try TestGPU.get()
        let notices = NoticeLog()
        let backend = try Backend(computeUnits: .automatic, context: context, notice: { notices.append($0) })
        let optimizer = try Optimizer(.sgd(learningRate: 0.1), backend: backend)
        if context.deviceInfo.kind == .cpu {
            guard case .cpu(let reason?) = optimizer.placement else {
                Issue.record("expected the CPU with a reason, got \(optimizer.placement)")
                return
            }
            // The device-wide reason is said once for all of the backend's work.
            #expect(notices.lines == ["everything runs on the CPU evaluator: \(reason)"])
        } else {
            #expect(optimizer.placement == .gpu)
        }
        #expect(try Optimizer(.sgd(learningRate: 0.1)).placement == .cpu(reason: nil))
    }
}

/// Collects a backend's notices (thread-safe).
private final class NoticeLog: @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [String] = []
    func append(_ line: String) { lock.lock(); collected.append(line); lock.unlock() }
    var lines: [String] { lock.lock(); defer { lock.unlock() }; return collected }
}
