import Foundation
import Testing
@testable import LayerKit

/// The update task end to end: the teacher-student recovery of Swish's
/// per-channel beta on both backends, the written model, checkpoints, and
/// the errors bad input gets.
@Suite struct TrainingTaskTests {
    static let directory = TrainingNetworkTests.directory
    static func url(_ name: String) -> URL { directory.appendingPathComponent(name) }
    static let teacherBeta: [Float] = [0.5, 1, 1.5, 2.5]

    static func teacherData() throws -> ArrayBatchProvider {
        try ArrayBatchProvider(inputs: TrainingNetworkTests.fixture("teacher_x.npy"),
                               targets: TrainingNetworkTests.fixture("teacher_y.npy"))
    }

    /// The student's configuration: MSE, Adam with a cosine decay to 0, Swish's beta only.
    static func studentConfiguration(epochs: Int = 60) -> TrainingConfiguration {
        var optimizer = OptimizerConfiguration.adam(learningRate: 0.1)
        optimizer.schedule = .cosine(maxEpochs: epochs, minimum: 0)
        return TrainingConfiguration(loss: .meanSquaredError, optimizer: optimizer, epochs: epochs, batchSize: 8,
                                     seed: 3, trainable: .customLayerWeights)
    }

    @Test(arguments: [false, true])
    func aStudentRecoversTheTeachersBeta(onGPU: Bool) throws {
        guard !onGPU || TestGPU.isEnabled else { return }
        let backend = onGPU ? try Backend(computeUnits: .gpu, context: TestGPU.get(), timestamps: false, notice: { _ in })
            : TrainingNetworkTests.cpu
        var events: [TrainingEvent] = []
        let task = try UpdateTask(modelAt: Self.url("student.onnx"), data: Self.teacherData(),
                                  configuration: Self.studentConfiguration(), backend: backend) { events.append($0) }
        #expect(task.trainableNames == ["beta"])
        try task.run()
        let beta = try #require(task.parameters["beta"])
        print("student beta on the \(onGPU ? "GPU" : "CPU"): \(beta.values)")
        for (c, expected) in Self.teacherBeta.enumerated() {
            #expect(abs(beta[c] - expected) <= 0.02 * expected, "channel \(c): beta \(beta[c]), teacher \(expected)")
        }
        #expect(events.first == .trainingBegan(steps: 480) && events.last == .completed(cancelled: false))
        #expect(events.filter { if case .epochEnded = $0 { true } else { false } }.count == 60)
        if onGPU { #expect(task.placementReport.contains { $0.placement == .gpu && $0.op == "optimizer" }) }
    }

    @Test func theWrittenModelPredictsWhatTheTaskDoes() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let task = try UpdateTask(modelAt: Self.url("student.onnx"), data: Self.teacherData(),
                                  configuration: Self.studentConfiguration(epochs: 2))
        try task.run()
        let output = URL(fileURLWithPath: folder.file("updated.onnx"))
        try task.writeModel(to: output)
        let x = try TrainingNetworkTests.fixture("teacher_x.npy")
        let model = try Model(contentsOf: output, computeUnits: .cpuOnly, notice: { _ in })
        let predicted = try #require(try model.predict(inputs: ["x": x])["y"])
        let expected = try task.predict(x)
        #expect(predicted.values == expected.values)
        // beta changed: the written model is not the original.
        #expect(try Data(contentsOf: output) != Data(contentsOf: Self.url("student.onnx")))
        #expect(throws: LayerKitError.self) { try task.writeModel(to: Self.url("student.onnx")) }
    }

    /// Two epochs straight, against one epoch, a checkpoint, and a new task resumed from it for the second.
    @Test func aResumedRunEqualsTheUninterruptedOneBitForBit() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let data = try ArrayBatchProvider(inputs: TrainingNetworkTests.fixture("adam_x.npy"),
                                          targets: TrainingNetworkTests.fixture("adam_labels.npy"))
        func configuration(epochs: Int) -> TrainingConfiguration {
            TrainingConfiguration(loss: .crossEntropy, optimizer: .adam(learningRate: 0.01), epochs: epochs, batchSize: 3,
                                  seed: 11, trainable: .all)
        }
        let model = Self.url("bn_net.onnx")
        let straight = try UpdateTask(modelAt: model, data: data, configuration: configuration(epochs: 2))
        try straight.run()
        let first = try UpdateTask(modelAt: model, data: data, configuration: configuration(epochs: 1))
        try first.run()
        let checkpoint = URL(fileURLWithPath: folder.file("run.lkckpt"))
        try first.writeCheckpoint(to: checkpoint)
        let resumed = try UpdateTask(modelAt: model, data: data, configuration: configuration(epochs: 2))
        try resumed.resume(fromCheckpoint: checkpoint)
        var losses: [Double] = []
        let events = try UpdateTask(modelAt: model, data: data, configuration: configuration(epochs: 2)) { event in
            if case .miniBatchEnded(let epoch, _, let loss) = event, epoch == 1 { losses.append(loss) }
        }
        try events.resume(fromCheckpoint: checkpoint)
        try events.run()
        try resumed.run()
        #expect(losses.count == 6)
        for name in straight.trainableNames {
            #expect(straight.parameters[name]?.values.map(\.bitPattern) == resumed.parameters[name]?.values.map(\.bitPattern),
                    "\(name) differs after resuming")
        }
        // Running statistics too: the written models are byte for byte the same.
        try straight.writeModel(to: URL(fileURLWithPath: folder.file("a.onnx")))
        try resumed.writeModel(to: URL(fileURLWithPath: folder.file("b.onnx")))
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder.file("a.onnx")))
                == Data(contentsOf: URL(fileURLWithPath: folder.file("b.onnx"))))
    }

    /// A resumed run takes the new task's hyper-parameters: a smaller learning rate moves beta less.
    @Test func aResumedRunMayChangeTheLearningRate() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let checkpoint = URL(fileURLWithPath: folder.file("student.lkckpt"))
        let first = try UpdateTask(modelAt: Self.url("student.onnx"), data: Self.teacherData(),
                                   configuration: Self.studentConfiguration(epochs: 1))
        try first.run()
        try first.writeCheckpoint(to: checkpoint)
        let before = try #require(first.parameters["beta"]).values
        func resumed(learningRate: Double) throws -> [Float] {
            var configuration = Self.studentConfiguration(epochs: 2)
            configuration.optimizer.learningRate = learningRate
            let task = try UpdateTask(modelAt: Self.url("student.onnx"), data: Self.teacherData(),
                                      configuration: configuration)
            try task.resume(fromCheckpoint: checkpoint)
            try task.run()
            return try #require(task.parameters["beta"]).values
        }
        let fast = try resumed(learningRate: 0.1), slow = try resumed(learningRate: 1e-4)
        let moved = { (b: [Float]) in zip(b, before).map { abs($0 - $1) }.reduce(0, +) }
        #expect(moved(slow) < moved(fast) / 10, "slow \(moved(slow)), fast \(moved(fast))")
        // Another optimizer's state does not fit: refused, naming both.
        var sgd = Self.studentConfiguration(epochs: 2)
        sgd.optimizer = .sgd(learningRate: 0.1)
        let other = try UpdateTask(modelAt: Self.url("student.onnx"), data: Self.teacherData(), configuration: sgd)
        #expect(throws: LayerKitError.self) { try other.resume(fromCheckpoint: checkpoint) }
    }

    @Test func badInputGetsClearErrors() throws {
        let student = Self.url("student.onnx")
        let config = Self.studentConfiguration(epochs: 1)
        func message(_ body: () throws -> Void) -> String {
            do { try body(); return "no error" } catch { return "\(error)" }
        }
        // Targets counting other examples than the data.
        #expect(message {
            _ = try ArrayBatchProvider(inputs: Tensor(shape: [4, 4, 4, 4]), targets: Tensor(shape: [5, 4, 4, 4]))
        }.contains("axis 0"))
        // Targets of another shape than the prediction's.
        let wrongTargets = try ArrayBatchProvider(inputs: Tensor(shape: [4, 4, 4, 4]), targets: Tensor(shape: [4, 3]))
        #expect(message { try UpdateTask(modelAt: student, data: wrongTargets, configuration: config).run() }
            .contains("target 4x3 does not match prediction 4x4x4x4"))
        // An unknown trainable name, with a suggestion.
        var named = config
        named.trainable = .named(["bta"])
        #expect(message { _ = try UpdateTask(modelAt: student, data: Self.teacherData(), configuration: named) }
            .contains("did you mean 'beta'"))
        // Examples that do not fit the model.
        let small = try ArrayBatchProvider(inputs: Tensor(shape: [4, 4, 2, 2]), targets: Tensor(shape: [4, 4, 2, 2]))
        #expect(message { _ = try UpdateTask(modelAt: student, data: small, configuration: config) }
            .contains("input has shape 4x2x2; the model takes examples of shape 4x4x4"))
        // A NaN in the data: the loss is not finite; the run stops naming the step, parameters untouched.
        let x = try TrainingNetworkTests.fixture("teacher_x.npy")
        x[5] = .nan
        let poisoned = try ArrayBatchProvider(inputs: x, targets: TrainingNetworkTests.fixture("teacher_y.npy"))
        var unshuffled = config
        unshuffled.shuffles = false
        let task = try UpdateTask(modelAt: student, data: poisoned, configuration: unshuffled)
        #expect(message { try task.run() }.contains("step 0 (epoch 0, batch 0)"))
        #expect(task.parameters["beta"]?.values == [1, 1, 1, 1])
    }

    @Test func aNodeWithoutABackwardPassIsNamed() throws {
        // Conv -> LRN -> output: LRN has no backward pass, and the conv's weights train through it.
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        /// A ValueInfoProto of a FLOAT tensor of `dims`.
        func valueInfo(_ name: String) -> [UInt8] {
            let shape = [1, 2, 2, 2].flatMap { PB.bytes(1, PB.int(1, Int64($0))) }
            return PB.string(1, name) + PB.bytes(2, PB.bytes(1, PB.int(1, 1) + PB.bytes(2, shape)))
        }
        let weights = ONNXBytes.tensor("w", dims: [2, 2, 1, 1], type: 1,
                                       PB.bytes(9, PB.littleEndian([Float](repeating: 0.5, count: 4).map(\.bitPattern))))
        let graph = ONNXBytes.graph(
            nodes: [ONNXBytes.node("Conv", inputs: ["x", "w"], outputs: ["c"], name: "conv"),
                    ONNXBytes.node("LRN", inputs: ["c"], outputs: ["y"], name: "norm",
                                   attributes: [PB.string(1, "size") + PB.int(3, 1) + PB.int(20, 2)])],
            initializers: [weights], inputs: [valueInfo("x")], extra: PB.bytes(12, valueInfo("y")))
        let path = folder.file("lrn.onnx")
        try ONNXBytes.model(graph: graph).write(to: URL(fileURLWithPath: path))
        let data = try ArrayBatchProvider(inputs: Tensor(shape: [2, 2, 2, 2]), targets: Tensor(shape: [2, 2, 2, 2]))
        let configuration = TrainingConfiguration(loss: .meanSquaredError, optimizer: .sgd(learningRate: 0.1),
                                                  trainable: .named(["w"]))
        do {
            _ = try UpdateTask(modelAt: URL(fileURLWithPath: path), data: data, configuration: configuration)
            Issue.record("an LRN between the weights and the loss was accepted")
        } catch {
            #expect("\(error)".contains("norm (LRN)") && "\(error)".contains("no backward pass"))
        }
    }
}
