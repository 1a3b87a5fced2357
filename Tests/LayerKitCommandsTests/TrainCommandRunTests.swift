import Foundation
import FoundationXML
import LayerKit
import Testing
@testable import LayerKitCommands

/// `layerkit train` end to end on the training fixtures
/// (Tests/LayerKitTests/Fixtures/Training, README.md there): the student
/// recovers the teacher's per-channel beta on the CPU and the GPU, a
/// resumed run writes the model an uninterrupted one does, a folder of
/// pictures trains exactly as the same pixels in a `.npy`, and a mistake
/// found in the model writes nothing.
struct TrainCommandRunTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("LayerKitTests/Fixtures/Training")

    static func fixture(_ name: String) -> String { fixtures.appendingPathComponent(name).path }

    /// The betas the teacher used (Scripts/generate_training_references.py).
    static let teacherBetas = [0.5, 1, 1.5, 2.5]

    /// The words that train the student on the teacher's data, writing `output`.
    static func student(output: String, _ extra: [String]) -> [String] {
        ["train", fixture("student.onnx"), "--data", fixture("teacher_x.npy"), "--labels", fixture("teacher_y.npy"),
         "--loss", "mse", "--trainable", "custom", "--optimizer", "adam", "--lr", "0.1", "--batch", "16",
         "--output", output] + extra
    }

    /// Each channel's beta of a written Swish student, read back through the
    /// model: on an input of ones, y = sigmoid(beta), so beta = log(y / (1 - y)).
    static func betas(of path: String) throws -> [Double] {
        let model = try Model(contentsOf: URL(fileURLWithPath: path), computeUnits: .cpuOnly)
        let ones = try Tensor(shape: [1, 4, 4, 4], values: Array(repeating: 1, count: 64))
        let y = try #require(try model.predict(inputs: ["x": ones])["y"])
        return (0..<4).map { c in
            let value = Double(y[c * 16])
            return log(value / (1 - value))
        }
    }

    func recoversTheTeachersBetas(backend: String) throws {
        let directory = try CommandRunner.scratchDirectory()
        let output = "\(directory)/trained.onnx"
        let runner = CommandRunner()
        let status = runner.run(Self.student(output: output, ["--epochs", "40", "--backend", backend, "--plot",
                                                              "\(directory)/loss.svg"]))
        #expect(status == 0, "\(runner.error)")
        let lines = runner.out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first?.hasPrefix("device: ") == true, "\(runner.out)")
        #expect(lines.contains("trainable: beta"), "\(runner.out)")
        let epochs = lines.filter { $0.hasPrefix("epoch ") }
        #expect(epochs.count == 40 && epochs[0].hasPrefix("epoch 1/40  loss ") && epochs[39].hasPrefix("epoch 40/40  loss "))
        #expect(lines.contains("wrote \(output)") && lines.contains("wrote \(directory)/loss.svg (loss curve)"))
        #expect(lines.contains { $0.hasPrefix("training work: ") }, "\(runner.out)")
        for (beta, expected) in zip(try Self.betas(of: output), Self.teacherBetas) {
            #expect(abs(beta - expected) <= 0.02 * expected, "\(backend): beta \(beta), teacher \(expected)")
        }
        let svg = try String(contentsOfFile: "\(directory)/loss.svg", encoding: .utf8)
        let parser = XMLParser(data: Data(svg.utf8))
        #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
        #expect(svg.contains("mini-batch loss") && svg.contains(">mse loss<"))
        if backend == "gpu" { #expect(runner.out.contains("  GPU\n"), "no training work on the GPU: \(runner.out)") }
    }

    @Test func theStudentRecoversEveryBetaOnTheCPU() throws {
        try recoversTheTeachersBetas(backend: "cpu")
    }

    @Test(.enabled(if: gpuTestsEnabled)) func theStudentRecoversEveryBetaOnTheGPU() throws {
        try recoversTheTeachersBetas(backend: "gpu")
    }

    /// `--stats`: a line after each of the 8 steps (2 epochs of 64 items in batches of 16),
    /// on the GPU with its counts, of which only the first step's allocate.
    @Test(arguments: ["cpu", "gpu"]) func statsPrintALinePerStep(backend: String) throws {
        guard backend == "cpu" || gpuTestsEnabled else { return }
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        let status = runner.run(Self.student(output: "\(directory)/trained.onnx",
                                             ["--epochs", "2", "--backend", backend, "--stats"]))
        #expect(status == 0, "\(runner.error)")
        let steps = runner.out.split(separator: "\n").map(String.init).filter { $0.hasPrefix("step ") }
        #expect(steps.count == 8, "\(runner.out)")
        for (i, line) in steps.enumerated() {
            #expect(line.hasPrefix("step \(i + 1)  ") && line.contains(" ms"), "\(line)")
            #expect(line.contains("  GPU: ") == (backend == "gpu"), "\(line)")
            if backend == "gpu" {
                #expect(line.contains("GPU: 0 allocations (0 images, 0 buffers), ") == (i > 0), "\(line)")
            }
        }
        let both = CommandRunner()
        #expect(both.run(Self.student(output: "\(directory)/other.onnx", ["--stats", "--json"])) == 2)
        #expect(both.error.contains("--stats"), "\(both.error)")
    }

    /// `--stats` of a head fine-tune on the GPU: the zoo's narrow MobileNetV2,
    /// its classifier trained, batches of 4 of 3x64x64. The forward pass
    /// runs as one plan, so a step after the first uploads the batch (fp16
    /// texels: 0.131 MB) and the gradients of the classifier's 1290
    /// parameters (5 KB: the parameters stay in the optimizer's buffer, and
    /// the Gemm's GPU weights are re-derived from it on the device; with
    /// both uploaded too, as before, a step uploaded 0.15 MB), and downloads
    /// the classifier's input, the logits and the updated parameters (under
    /// 0.02 MB); layer by layer it moved every activation of the frozen
    /// backbone up and down (2.65 MB up, 2.42 MB down a step before the
    /// one-plan forward pass).
    @Test(.enabled(if: gpuTestsEnabled)) func statsOfAHeadFineTuneCountTheBatchAndTheHeadsValues() throws {
        let directory = try CommandRunner.scratchDirectory()
        let model = Self.fixtures.deletingLastPathComponent()
            .appendingPathComponent("onnx-cases/zoo/mobilenet_v2_torchscript/model.onnx").path
        try Tensor.uniform(shape: [8, 3, 64, 64], in: -1...1, seed: 5).writeNPY(to: "\(directory)/x.npy")
        try writeNPY((0..<8).map { Float($0 % 10) }, shape: [8], to: "\(directory)/y.npy")
        let runner = CommandRunner()
        #expect(runner.run(["train", model, "--data", "\(directory)/x.npy", "--labels", "\(directory)/y.npy",
                            "--loss", "ce", "--trainable", "last:1", "--batch", "4", "--epochs", "1", "--backend", "gpu",
                            "--stats", "--output", "\(directory)/tuned.onnx"]) == 0, "\(runner.error)")
        let steps = runner.out.split(separator: "\n").map(String.init).filter { $0.hasPrefix("step ") }
        #expect(steps.count == 2, "\(runner.out)")
        // `step 2  12.83 ms  GPU: 0 allocations (0 images, 0 buffers), 0.14 MB up, 0.01 MB down`
        let words = try #require(steps.last).split(separator: " ").map(String.init)
        let up = try #require(words.firstIndex(of: "up,").flatMap { Double(words[$0 - 2]) }, "\(runner.out)")
        let down = try #require(words.firstIndex(of: "down").flatMap { Double(words[$0 - 2]) }, "\(runner.out)")
        #expect(up <= 0.14 && down <= 0.02, "\(runner.out)")
        #expect(steps.last?.contains("GPU: 0 allocations") == true, "\(runner.out)")
    }

    @Test func aResumedRunWritesTheModelOfAnUninterruptedOne() throws {
        let directory = try CommandRunner.scratchDirectory()
        let common = ["--backend", "cpu", "--threads", "1", "--seed", "7"]
        let whole = CommandRunner()
        #expect(whole.run(Self.student(output: "\(directory)/whole.onnx", common + ["--epochs", "4"])) == 0, "\(whole.error)")
        let first = CommandRunner()
        #expect(first.run(Self.student(output: "\(directory)/half.onnx", common + ["--epochs", "2", "--checkpoint",
                                                                                   "\(directory)/half.ckpt"])) == 0,
                "\(first.error)")
        #expect(first.out.contains("wrote \(directory)/half.ckpt (checkpoint)"))
        let second = CommandRunner()
        #expect(second.run(Self.student(output: "\(directory)/resumed.onnx", common + ["--epochs", "4", "--resume",
                                                                                       "\(directory)/half.ckpt"])) == 0,
                "\(second.error)")
        // The resumed run shows epochs 3 and 4 only, with the uninterrupted run's losses.
        let wholeEpochs = whole.out.split(separator: "\n").filter { $0.hasPrefix("epoch ") }.map { $0.split(separator: " ")[3] }
        let resumedEpochs = second.out.split(separator: "\n").filter { $0.hasPrefix("epoch ") }
        #expect(resumedEpochs.map { String($0.prefix(9)) } == ["epoch 3/4", "epoch 4/4"], "\(second.out)")
        #expect(resumedEpochs.map { $0.split(separator: " ")[3] } == Array(wholeEpochs.suffix(2)))
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/resumed.onnx"))
                == Data(contentsOf: URL(fileURLWithPath: "\(directory)/whole.onnx")))
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/half.onnx"))
                != Data(contentsOf: URL(fileURLWithPath: "\(directory)/whole.onnx")))
    }

    @Test func aCustomOpGivenAsAFormulaTrainsItsPerChannelWeights() throws {
        // A com.example.ArticleSwish node with a constant beta of ones, run as a formula (--layer).
        let directory = try CommandRunner.scratchDirectory()
        let model = "\(directory)/article.onnx"
        try TinyONNX.model(opType: "ArticleSwish", domain: "com.example", shape: [1, 3, 2, 2], attributes: [:],
                           constants: ["swish.beta": [1, 1, 1]]).write(to: URL(fileURLWithPath: model))
        // The teacher, in float64: beta 0.5, 1.25, 2 per channel, on 24 seeded items.
        let betas = [0.5, 1.25, 2.0]
        let x = try Tensor.uniform(shape: [24, 3, 2, 2], in: -4...4, seed: 9)
        let y = try Tensor(shape: x.shape, values: x.values.enumerated().map { i, value in
            let (v, b) = (Double(value), betas[(i / 4) % 3])
            return Float(v / (1 + exp(-b * v)))
        })
        try x.writeNPY(to: "\(directory)/x.npy")
        try y.writeNPY(to: "\(directory)/y.npy")
        let runner = CommandRunner()
        #expect(runner.run(["train", model, "--layer", ModelLayerOptionTests.formula, "--data", "\(directory)/x.npy",
                            "--labels", "\(directory)/y.npy", "--loss", "mse", "--trainable", "custom", "--optimizer", "adam",
                            "--lr", "0.1", "--batch", "1", "--epochs", "10", "--backend", "cpu",
                            "--output", "\(directory)/trained.onnx"]) == 0, "\(runner.error)")
        #expect(runner.out.contains("trainable: swish.beta"), "\(runner.out)")
        // The written model run as the formula on ones: sigmoid(beta) per channel.
        let trained = try Model(contentsOf: URL(fileURLWithPath: "\(directory)/trained.onnx"), computeUnits: .cpuOnly,
                                registry: try ModelFiles.registry([ModelLayerOptionTests.formula]))
        let out = try #require(try trained.predict(inputs: ["x": try Tensor(shape: [1, 3, 2, 2],
                                                                            values: Array(repeating: 1, count: 12))])["y"])
        for (c, expected) in betas.enumerated() {
            let value = Double(out[c * 4])
            let beta = log(value / (1 - value))
            #expect(abs(beta - expected) <= 0.02 * expected, "channel \(c): beta \(beta), teacher \(expected)")
        }
    }

    @Test func aNaNInTheTargetsStopsTrainingNamingTheStepAndNothingIsWritten() throws {
        let directory = try CommandRunner.scratchDirectory()
        let x = try Tensor(npyFile: Self.fixture("teacher_x.npy"))
        var targets = try Tensor(npyFile: Self.fixture("teacher_y.npy")).values
        targets[5 * 64 + 3] = .nan  // one value of item 5
        try x.writeNPY(to: "\(directory)/x.npy")
        try Tensor(shape: x.shape, values: targets).writeNPY(to: "\(directory)/y.npy")
        let runner = CommandRunner()
        #expect(runner.run(["train", Self.fixture("student.onnx"), "--data", "\(directory)/x.npy", "--labels",
                            "\(directory)/y.npy", "--loss", "mse", "--trainable", "beta", "--epochs", "2", "--backend", "cpu",
                            "--output", "\(directory)/out.onnx", "--checkpoint", "\(directory)/out.ckpt",
                            "--plot", "\(directory)/out.svg"]) == 1)
        #expect(runner.error.hasPrefix("layerkit: error: step ") && runner.error.contains("holds nan"), "\(runner.error)")
        #expect(runner.error.split(separator: "\n").count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["x.npy", "y.npy"])
    }

    @Test func aCheckpointOfAnotherRunIsRefusedAndNothingIsWritten() throws {
        let directory = try CommandRunner.scratchDirectory()
        let first = CommandRunner()
        #expect(first.run(Self.student(output: "\(directory)/a.onnx", ["--epochs", "1", "--backend", "cpu", "--checkpoint",
                                                                       "\(directory)/a.ckpt"])) == 0, "\(first.error)")
        var words = Self.student(output: "\(directory)/b.onnx", ["--epochs", "2", "--backend", "cpu", "--resume",
                                                                 "\(directory)/a.ckpt", "--plot", "\(directory)/b.svg"])
        words[words.firstIndex(of: "adam")!] = "sgd"
        let second = CommandRunner()
        #expect(second.run(words) == 1)
        #expect(second.error.contains("resume with --optimizer adam"), "\(second.error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["a.ckpt", "a.onnx"])
    }

    @Test func anUnknownTrainableNameGetsTheClosestAndNothingIsWritten() throws {
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        var words = Self.student(output: "\(directory)/out.onnx", ["--backend", "cpu", "--plot", "\(directory)/l.svg"])
        words[words.firstIndex(of: "custom")!] = "bta"
        #expect(runner.run(words) == 1)
        #expect(runner.error.contains("unknown trainable 'bta'") && runner.error.contains("did you mean 'beta'?"),
                "\(runner.error)")
        #expect(runner.error.split(separator: "\n").count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    /// Eight seeded 8x8 RGB pictures and their pixels as a [8, 3, 8, 8] tensor.
    static func pictures(in folder: String) throws -> Tensor {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let stacked = try Tensor(shape: [8, 3, 8, 8])
        for i in 0..<8 {
            let levels = try Tensor.uniform(shape: [1, 3, 8, 8], in: 0...1, seed: UInt64(20 + i))
            let pixels = try Tensor(shape: levels.shape, values: levels.values.map { ($0 * 255).rounded() / 255 })
            try pixels.writeImagePNG(to: "\(folder)/picture-\(i).png")
            (stacked.dataPointer + i * 192).update(from: pixels.dataPointer, count: 192)
        }
        return stacked
    }

    @Test func aFolderOfPicturesTrainsAsTheSamePixelsInANPY() throws {
        let directory = try CommandRunner.scratchDirectory()
        let pixels = try Self.pictures(in: "\(directory)/pictures")
        try pixels.writeNPY(to: "\(directory)/x.npy")
        let classes = [3, 0, 4, 1, 1, 2, 0, 4]
        try Data(classes.map(String.init).joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: "\(directory)/classes.txt"))
        let words = { (data: String, output: String) in
            ["train", Self.fixture("swish_net.onnx"), "--data", data, "--labels", "\(directory)/classes.txt",
             "--loss", "ce", "--trainable", "last:1", "--batch", "4", "--epochs", "3", "--lr", "0.1", "--backend", "cpu",
             "--threads", "1", "--output", output]
        }
        let folder = CommandRunner()
        #expect(folder.run(words("\(directory)/pictures", "\(directory)/from-folder.onnx")) == 0, "\(folder.error)")
        #expect(folder.out.contains("trainable: fc.bias, fc.weight"), "\(folder.out)")
        let npy = CommandRunner()
        #expect(npy.run(words("\(directory)/x.npy", "\(directory)/from-npy.onnx")) == 0, "\(npy.error)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/from-folder.onnx"))
                == Data(contentsOf: URL(fileURLWithPath: "\(directory)/from-npy.onnx")))
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/from-folder.onnx"))
                != Data(contentsOf: URL(fileURLWithPath: Self.fixture("swish_net.onnx"))))
        // A class the model does not have (5 outputs) is an error before training.
        try Data("3\n0\n4\n1\n1\n2\n0\n5".utf8).write(to: URL(fileURLWithPath: "\(directory)/classes.txt"))
        let bad = CommandRunner()
        #expect(bad.run(words("\(directory)/pictures", "\(directory)/bad.onnx")) == 1)
        #expect(bad.error.contains("label 5 of \(directory)/pictures/picture-7.png (item 7) is not a class of the "
                                   + "model's 5 (0 to 4)"), "\(bad.error)")
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/bad.onnx"))
    }

    @Test func onATerminalABarIsDrawnAndErasedAndTheLinesAreTheSame() throws {
        let directory = try CommandRunner.scratchDirectory()
        let words = Self.student(output: "\(directory)/out.onnx", ["--epochs", "3", "--backend", "cpu"])
        let plain = CommandRunner()
        #expect(plain.run(words) == 0, "\(plain.error)")
        let terminal = CommandRunner()
        let out = CommandRunner()
        let console = Console(out: { out.recordOut($0) }, error: { terminal.recordError($0) }, errorIsTerminal: true)
        #expect(LayerKitCommands.main(words, console: console) == 0, "\(terminal.error)")
        // The bar: drawn over 12 mini-batches, erased before each epoch line and at the end.
        #expect(terminal.error.contains("train student.onnx [") && terminal.error.contains("] 12/12 100% "),
                "\(terminal.error.debugDescription)")
        #expect(terminal.error.hasSuffix("\r\u{1B}[K"))
        // The same lines as without a terminal, times aside.
        let masked = { (text: String) in
            text.replacingOccurrences(of: #"  [0-9]+\.[0-9]+ s"#, with: "  # s", options: .regularExpression)
        }
        #expect(masked(out.out) == masked(plain.out))
    }

    @Test func jsonHasTheDocumentedFields() throws {
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        #expect(runner.run(Self.student(output: "\(directory)/out.onnx", ["--epochs", "2", "--backend", "cpu", "--json"])) == 0,
                "\(runner.error)")
        #expect(runner.out.split(separator: "\n").count == 1)
        let record = try #require(try JSONSerialization.jsonObject(with: Data(runner.out.utf8)) as? [String: Any])
        #expect(record["schema"] as? String == "layerkit-train/1")
        for key in ["model", "output", "cpu", "items", "trainable", "settings", "epochs", "placement"] {
            #expect(record[key] != nil, "missing \(key)")
        }
        #expect(record["items"] as? Int == 64 && record["trainable"] as? [String] == ["beta"])
        let epochs = try #require(record["epochs"] as? [[String: Any]])
        #expect(epochs.map { $0["epoch"] as? Int } == [1, 2])
        #expect(epochs.allSatisfy { ($0["batchLosses"] as? [Double])?.count == 4 })
        let placement = try #require(record["placement"] as? [[String: Any]])
        #expect(!placement.isEmpty && placement.allSatisfy { $0["placement"] as? String == "cpu" && $0["cpuReason"] == nil })
    }
}
