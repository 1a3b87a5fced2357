import Foundation
import FoundationXML
@testable import LayerKit
import Testing
@testable import LayerKitCommands

/// `layerkit train`: its options checked before anything is read or
/// written (exit 2 for the command line, 1 for files), the loss-curve
/// picture, the epoch lines and the placement summary.
struct TrainCommandTests {
    static let model = ModelCommandTests.fixture("article_beta1.onnx")

    /// The words of a run that trains on `data` and `labels` and writes `output`.
    static func words(data: String, labels: String, output: String, _ extra: [String] = []) -> [String] {
        ["train", model, "--data", data, "--labels", labels, "--loss", "mse", "--trainable", "custom",
         "--output", output, "--backend", "cpu"] + extra
    }

    @Test(arguments: [
        (["--loss", "hinge"], "--loss hinge: expected ce (cross-entropy from logits), mse, l1, bce"),
        (["--optimizer", "rmsprop"], "--optimizer rmsprop: expected sgd, adam or adamw"),
        (["--lr", "0"], "--lr 0: expected a finite number above 0"),
        (["--lr", "nan"], "--lr nan: expected a finite number above 0"),
        (["--lr", "abc"], "--lr abc: expected a finite number above 0"),
        (["--momentum", "1"], "--momentum 1: expected a number from 0 to below 1"),
        (["--optimizer", "adam", "--momentum", "0.9"], "--momentum is SGD's"),
        (["--nesterov"], "--nesterov needs SGD with momentum"),
        (["--weight-decay", "-1"], "--weight-decay -1: expected a finite number, 0 or more"),
        (["--clip-norm", "0"], "--clip-norm 0: expected a finite number above 0"),
        (["--schedule", "linear"], "--schedule linear: expected constant, cosine or step:EPOCHS,FACTOR"),
        (["--schedule", "step:0,0.5"], "--schedule step:0,0.5"),
        (["--schedule", "step:2,-1"], "FACTOR a finite number above 0"),
        (["--epochs", "0"], "--epochs 0: expected a whole number from 1 to 100000"),
        (["--batch", "-2"], "--batch -2: expected a whole number from 1"),
        (["--seed", "-1"], "--seed -1: expected a non-negative integer"),
        (["--trainable", "a,,b"], "--trainable a,,b: expected NAME[,NAME...]"),
        (["--trainable", "beta,beta"], "a name is given twice"),
        (["--trainable", "last:0"], "--trainable last:N 0: expected a whole number from 1"),
        (["--backend", "tpu"], "--backend tpu: expected cpu, gpu or auto"),
        (["--normalize", "0,2"], "--normalize: pixel normalization '0,2'"),
        (["--output", "out.npy"], "out.npy: expected a .onnx file name"),
        (["--plot", "loss.png"], "loss.png: expected a .svg file name"),
        (["--epoch", "3"], "did you mean --epochs?"),
    ] as [([String], String)])
    func badValuesAreUsageErrorsAndWriteNothing(_ extra: [String], message: String) throws {
        let directory = try CommandRunner.scratchDirectory()
        try writeNPY([0.5, -1], shape: [2, 1], to: "\(directory)/x.npy")
        try writeNPY([0.3, -0.2], shape: [2, 1], to: "\(directory)/y.npy")
        let runner = CommandRunner()
        var words = Self.words(data: "\(directory)/x.npy", labels: "\(directory)/y.npy", output: "\(directory)/out.onnx")
        // A later value of an option wins; one given twice is its own error, so replace instead.
        for (name, value) in zip(extra, extra.dropFirst() + [""]) where name.hasPrefix("--") {
            if let i = words.firstIndex(of: name) { words.removeSubrange(i...i + 1) }
            words += value.hasPrefix("--") || value.isEmpty ? [name] : [name, value]
        }
        #expect(runner.run(words) == 2, "\(words): \(runner.error)")
        #expect(runner.error.contains(message), "\(runner.error)")
        #expect(runner.error.split(separator: "\n").count == 1, "\(runner.error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["x.npy", "y.npy"])
    }

    @Test func missingOptionsAreNamed() {
        for missing in ["--data", "--labels", "--loss", "--trainable", "--output"] {
            var words = Self.words(data: "x.npy", labels: "y.npy", output: "out.onnx")
            let i = words.firstIndex(of: missing)!
            words.removeSubrange(i...i + 1)
            let runner = CommandRunner()
            #expect(runner.run(words) == 2)
            #expect(runner.error == "layerkit: error: missing \(missing)\n", "\(runner.error)")
        }
    }

    @Test func outputsAreNeverAnInputNorEachOther() throws {
        let directory = try CommandRunner.scratchDirectory()
        let (x, y) = ("\(directory)/x.npy", "\(directory)/y.npy")
        try writeNPY([0.5, -1], shape: [2, 1], to: x)
        try writeNPY([0.3, -0.2], shape: [2, 1], to: y)
        let copy = "\(directory)/model.onnx"
        try FileManager.default.copyItem(atPath: Self.model, toPath: copy)
        let original = try Data(contentsOf: URL(fileURLWithPath: copy))
        let cases: [([String], Int32, String)] = [
            (["train", copy, "--data", x, "--labels", y, "--loss", "mse", "--trainable", "custom", "--output", copy],
             1, "output \(copy) is also an input (\(copy)); refusing to overwrite it"),
            (Self.words(data: x, labels: y, output: "\(directory)/out.onnx", ["--checkpoint", y]),
             1, "output \(y) is also an input (\(y))"),
            (Self.words(data: x, labels: y, output: "\(directory)/out.onnx", ["--checkpoint", "\(directory)/out.onnx"]),
             2, "--checkpoint \(directory)/out.onnx is also --output"),
            (Self.words(data: x, labels: y, output: "\(directory)/out.onnx", ["--resume", "\(directory)/r.ckpt",
                                                                               "--checkpoint", "\(directory)/r.ckpt"]),
             1, "is also an input"),
        ]
        try Data("not a checkpoint".utf8).write(to: URL(fileURLWithPath: "\(directory)/r.ckpt"))
        for (words, status, message) in cases {
            let runner = CommandRunner()
            #expect(runner.run(words) == status, "\(words): \(runner.error)")
            #expect(runner.error.contains(message), "\(runner.error)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: copy)) == original)
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/out.onnx"))
    }

    @Test func labelsMustMatchTheDataItemForItem() throws {
        let directory = try CommandRunner.scratchDirectory()
        try writeNPY([0.5, -1, 2], shape: [3, 1], to: "\(directory)/x.npy")
        try writeNPY([0.3, -0.2], shape: [2, 1], to: "\(directory)/y.npy")
        let runner = CommandRunner()
        #expect(runner.run(Self.words(data: "\(directory)/x.npy", labels: "\(directory)/y.npy",
                                      output: "\(directory)/out.onnx")) == 1)
        #expect(runner.error == "layerkit: error: --labels \(directory)/y.npy has 2 items (axis 0 of 2x1), --data "
                + "\(directory)/x.npy has 3 (axis 0 of 3x1): give one label per item\n", "\(runner.error)")
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/out.onnx"))
    }

    @Test func aFolderOfPicturesNeedsClassLabelsOnePerPicture() throws {
        let directory = try CommandRunner.scratchDirectory()
        try FileManager.default.createDirectory(atPath: "\(directory)/pictures", withIntermediateDirectories: false)
        for name in ["a.png", "b.png", "c.png"] {
            try Tensor.uniform(shape: [1, 3, 8, 8], in: 0...1, seed: 3).writeImagePNG(to: "\(directory)/pictures/\(name)")
        }
        try Data("0\n1\n".utf8).write(to: URL(fileURLWithPath: "\(directory)/classes.txt"))
        let runner = CommandRunner()
        #expect(runner.run(["train", Self.model, "--data", "\(directory)/pictures", "--labels", "\(directory)/classes.txt",
                            "--loss", "ce", "--trainable", "custom", "--output", "\(directory)/out.onnx",
                            "--backend", "cpu"]) == 1)
        #expect(runner.error == "layerkit: error: 2 labels for 3 pictures in \(directory)/pictures: give one class index "
                + "per picture, in file-name order\n", "\(runner.error)")
        let mse = CommandRunner()
        #expect(mse.run(["train", Self.model, "--data", "\(directory)/pictures", "--labels", "\(directory)/classes.txt",
                         "--loss", "mse", "--trainable", "custom", "--output", "\(directory)/out.onnx"]) == 2)
        #expect(mse.error.contains("a folder's labels are class indices, for --loss ce"), "\(mse.error)")
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/out.onnx"))
    }

    @Test func theLossPlotIsWellFormedSVGWithBothCurvesAndLabelledAxes() throws {
        let epochs = [LossPlot.Epoch(number: 1, batchLosses: [2.0, 1.5, 1.0], mean: 1.5),
                      LossPlot.Epoch(number: 2, batchLosses: [0.5, 0.2, 0], mean: 0.35)]
        let svg = LossPlot.svg(epochs, title: "layerkit train student.onnx", subtitle: ["adam, lr 0.05"], lossName: "mse")
        let parser = XMLParser(data: Data(svg.utf8))
        #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
        for text in ["layerkit train student.onnx", "adam, lr 0.05", ">epoch<", ">mse loss<", "mini-batch loss",
                     "epoch mean", "1 losses of 0 or infinity are not drawn"] {
            #expect(svg.contains(text), "missing \(text)")
        }
        // Two curves: five drawable mini-batch points, then the two means with their dots.
        let polylines = svg.components(separatedBy: "<polyline points=\"").dropFirst()
            .map { $0.prefix { $0 != "\"" }.split(separator: " ").count }
        #expect(polylines == [5, 2])
        #expect(svg.components(separatedBy: "<circle").count - 1 == 2)
        // The x axis is linear in epochs: ticks 0, 1, 2 evenly spaced.
        let ticks = ["0", "1", "2"].compactMap { label -> Double? in
            guard let range = svg.range(of: #"<text x="([0-9.]+)" y="[0-9.]+" text-anchor="middle">\#(label)</text>"#,
                                        options: .regularExpression) else { return nil }
            return Double(svg[range].split(separator: "\"")[1])
        }
        #expect(ticks.count == 3 && abs((ticks[2] - ticks[1]) - (ticks[1] - ticks[0])) < 0.2, "\(ticks)")
    }

    @Test func epochLinesAndThePlacementSummary() {
        #expect(TrainingLog.line(epoch: 3, of: 5, loss: 0.12344, seconds: 1.234) == "epoch 3/5  loss 0.1234  1.23 s")
        #expect(TrainingLog.line(epoch: 10, of: 10, loss: 0.00001234, seconds: 0.5) == "epoch 10/10  loss 1.234e-05  0.50 s")
        #expect(TrainingLog.line(epoch: 1, of: 10, loss: 2.302585, seconds: 12.345) == "epoch 1/10  loss 2.303  12.35 s")
        let report = [TrainingWork(op: "conv (Conv)", work: "weights gradient", placement: .gpu),
                      TrainingWork(op: "swish (Swish)", work: "derivative", placement: .cpu(reason: "no kernel")),
                      TrainingWork(op: "optimizer", work: "adam step", placement: .cpu(reason: nil))]
        #expect(PlacementSummary.lines(report) == [
            "training work: 3 kinds, 1 on the GPU, 2 on the CPU",
            "  conv (Conv)    weights gradient  GPU",
            "  swish (Swish)  derivative        CPU (no kernel)",
            "  optimizer      adam step         CPU",
        ])
    }
}
