import Foundation
import LayerKit
import Testing
@testable import LayerKitCommands

/// The image-classifier workflow through the CLI: picture options on every
/// model command, channels-last models, `--labels` and `--softmax`,
/// seeded shapes for `bench`, `profile --by-op`.
struct ImageClassifierCommandTests {
    let directory: String
    init() throws { directory = try CommandRunner.scratchDirectory() }

    static let resampling = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("LayerKitTests/Fixtures/resampling")
    static let article = ImageCommandTests.fixture("models/article_beta1.onnx")

    /// A chain model `x → y` of `shape` written in the scratch folder.
    func model(_ nodes: [TinyONNX.Node], shape: [Int], batch: String? = nil) throws -> String {
        let path = "\(directory)/model\(UUID().uuidString.prefix(8)).onnx"
        try TinyONNX.chain(nodes, shape: shape, batch: batch).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func aChannelsLastModelTakesAPictureAsNHWC() throws {
        // The picture's pixels in HWC order are the independent reference.
        let (photo, pixels) = try ImageCommandTests.photo(in: directory)
        let nhwc = try model([TinyONNX.Node(opType: "Relu")], shape: [1, 6, 8, 3])
        let runner = CommandRunner()
        #expect(runner.run(["run", nhwc, "--input", photo, "--output", "\(directory)/y.npy", "--backend", "cpu"]) == 0,
                "\(runner.error)")
        let y = try Tensor(npyFile: "\(directory)/y.npy")
        #expect(y.shape == [1, 6, 8, 3])
        var expected: [Float] = []
        for row in 0..<6 { for column in 0..<8 { for c in 0..<3 { expected.append(pixels[(c * 6 + row) * 8 + column]) } } }
        #expect(y.values == expected)
        // --layout nchw overrides the guess, and the mismatch is explained.
        let forced = CommandRunner()
        #expect(forced.run(["run", nhwc, "--input", photo, "--layout", "nchw", "--backend", "cpu"]) == 1)
        #expect(forced.error.contains("takes 3x8 (NCHW)"), "\(forced.error)")
        let bad = CommandRunner()
        #expect(bad.run(["run", nhwc, "--input", photo, "--layout", "hwc"]) == 2)
        #expect(bad.error.contains("--layout: 'hwc': expected nchw, nhwc"), "\(bad.error)")
    }

    @Test func resizeCenterCropAndNormalizeMatchTheReferenceThroughRun() throws {
        // photo.jpg through torchvision's recipe, into an identity-like model of the crop's shape.
        let identity = try model([TinyONNX.Node(opType: "Identity")], shape: [1, 3, 224, 224])
        let runner = CommandRunner()
        #expect(runner.run(["run", identity, "--input", Self.resampling.appendingPathComponent("photo.jpg").path,
                            "--resize", "256", "--center-crop", "224", "--normalize", "imagenet",
                            "--output", "\(directory)/y.npy", "--backend", "cpu"]) == 0, "\(runner.error)")
        let y = try Tensor(npyFile: "\(directory)/y.npy")
        let reference = try Tensor(npyFile: Self.resampling.appendingPathComponent("imagenet_224.npy").path)
        var worst: Float = 0
        for c in 0..<3 {
            for row in 0..<56 {
                for column in 0..<56 {
                    worst = max(worst, abs(y[(c * 224 + row * 4) * 224 + column * 4] - reference[(c * 56 + row) * 56 + column]))
                }
            }
        }
        #expect(worst <= 2 / 255 / 0.224, "max difference \(worst)")
    }

    @Test(arguments: [["--resize", "3x"], ["--center-crop", "0"], ["--interpolation", "lanczos"], ["--scale", "-1"],
                      ["--channel-order", "grb"], ["--normalize", "imagenett"]])
    func badPictureOptionsAreUsageErrors(_ options: [String]) throws {
        let (photo, _) = try ImageCommandTests.photo(in: directory)
        let runner = CommandRunner()
        #expect(runner.run(["run", Self.article, "--input", photo] + options) == 2)
        #expect(runner.error.contains(options[0]), "\(runner.error)")
    }

    @Test func aCropLargerThanThePictureIsAnError() throws {
        let (photo, _) = try ImageCommandTests.photo(in: directory)
        let runner = CommandRunner()
        #expect(runner.run(["run", Self.article, "--input", photo, "--center-crop", "32"]) != 0)
        #expect(runner.error.contains("larger than the 8x6 picture"), "\(runner.error)")
    }

    @Test func parityTakesTheSamePictureOptions() throws {
        let (photo, _) = try ImageCommandTests.photo(in: directory)
        let runner = CommandRunner()
        let status = runner.run(["parity", Self.article, "--input", photo, "--resize", "40", "--center-crop", "32",
                                 "--normalize", "imagenet"])
        // No GPU: parity says so (exit 1); with one it compares. Either way the options are accepted.
        #expect(!runner.error.contains("unknown option"), "\(runner.error)")
        #expect(status == 0 || runner.error.contains("parity needs a GPU"), "\(runner.out)\(runner.error)")
    }

    @Test func labelsAndSoftmaxNameTheTopClasses() throws {
        let logits: [Float] = [1e-9, 2, 0.5, -1, 3]
        try Tensor(shape: [1, 5], values: logits).writeNPY(to: "\(directory)/x.npy")
        try Data("zero\none\ntwo\nthree\nfour\n".utf8).write(to: URL(fileURLWithPath: "\(directory)/labels.txt"))
        let classifier = try model([TinyONNX.Node(opType: "Identity")], shape: [1, 5])
        let plain = CommandRunner()
        #expect(plain.run(["run", classifier, "--input", "\(directory)/x.npy", "--backend", "cpu"]) == 0)
        // A tiny logit is not printed as 0.0000.
        #expect(plain.out.contains("0 (1.000e-09)"), "\(plain.out)")
        let named = CommandRunner()
        #expect(named.run(["run", classifier, "--input", "\(directory)/x.npy", "--labels", "\(directory)/labels.txt",
                           "--softmax", "--top", "2", "--backend", "cpu"]) == 0, "\(named.error)")
        // Softmax in float64: e^(x - 3) / sum.
        let exps = logits.map { Foundation.exp(Double($0) - 3) }
        let p = exps.map { $0 / exps.reduce(0, +) }
        #expect(named.out.contains("top-2: 4 four (\(String(format: "%.4f", p[4]))), 1 one (\(String(format: "%.4f", p[1])))"),
                "\(named.out)")
        let json = CommandRunner()
        #expect(json.run(["run", classifier, "--input", "\(directory)/x.npy", "--labels", "\(directory)/labels.txt",
                          "--softmax", "--json", "--backend", "cpu"]) == 0)
        let record = try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any]
        let runs = try #require(record?["runs"] as? [[String: Any]])
        let outputs = try #require(runs.first?["outputs"] as? [[String: Any]])
        let top = try #require((outputs.first?["top"] as? [[[String: Any]]])?.first)
        #expect(top.map { $0["label"] as? String } == ["four", "one", "two", "zero", "three"])
        let probabilities = top.compactMap { ($0["probability"] as? NSNumber)?.doubleValue }
        #expect(zip(probabilities, [p[4], p[1], p[2], p[0], p[3]]).allSatisfy { abs($0 - $1) < 1e-6 }, "\(probabilities)")
        // Labels that fit no output are refused.
        try Data("a\nb\n".utf8).write(to: URL(fileURLWithPath: "\(directory)/two.txt"))
        let wrong = CommandRunner()
        #expect(wrong.run(["run", classifier, "--input", "\(directory)/x.npy", "--labels", "\(directory)/two.txt"]) == 2)
        #expect(wrong.error.contains("has 2 labels"), "\(wrong.error)")
    }

    @Test func benchTakesAShapeOrADimensionForAFreeBatch() throws {
        let batched = try model([TinyONNX.Node(opType: "Relu")], shape: [1, 3, 4, 4], batch: "N")
        for options in [["--dim", "N=5"], ["--shape", "x=5x3x4x4"], ["--shape", "5x3x4x4"]] {
            let runner = CommandRunner()
            #expect(runner.run(["bench", batched, "--backend", "cpu", "--repeat", "1", "--warmup", "0"] + options) == 0,
                    "\(runner.error)")
            #expect(runner.out.contains("x 5x3x4x4 seeded"), "\(options): \(runner.out)")
        }
        for (options, message) in [(["--dim", "M=5"], "no input has a dimension 'M'"),
                                   (["--shape", "x=5x4x4x4"], "give its fixed sizes as they are"),
                                   (["--shape", "y=5x3x4x4"], "the model has no input 'y'"),
                                   (["--dim", "N=0"], "expected SYMBOL=N")] {
            let runner = CommandRunner()
            #expect(runner.run(["bench", batched, "--backend", "cpu"] + options) == 2)
            #expect(runner.error.contains(message), "\(runner.error)")
        }
    }

    @Test func profileByOpTypeAndSortedByTime() throws {
        let chain = try model([TinyONNX.Node(opType: "Relu"), TinyONNX.Node(opType: "Sigmoid"), TinyONNX.Node(opType: "Relu")],
                              shape: [1, 8, 32, 32])
        let byOp = CommandRunner()
        #expect(byOp.run(["profile", chain, "--by-op", "--backend", "cpu", "--repeat", "1", "--warmup", "0"]) == 0,
                "\(byOp.error)")
        let rows = byOp.out.split(separator: "\n").map(String.init)
        #expect(rows.contains { $0.hasPrefix("op type") }, "\(byOp.out)")
        let relu = try #require(rows.first { $0.hasPrefix("Relu ") })
        #expect(relu.split(separator: " ", omittingEmptySubsequences: true)[2] == "2", "\(relu)")  // Relu, CPU, 2 calls
        #expect(rows.contains { $0.hasPrefix("Sigmoid ") })
        let sorted = CommandRunner()
        #expect(sorted.run(["profile", chain, "--sort", "time", "--backend", "cpu", "--repeat", "1", "--warmup", "0", "--json"]) == 0)
        let record = try JSONSerialization.jsonObject(with: Data(sorted.out.utf8)) as? [String: Any]
        let times = try #require(record?["layers"] as? [[String: Any]]).compactMap { ($0["ms"] as? NSNumber)?.doubleValue }
        #expect(times.count == 3 && times == times.sorted(by: >), "\(times)")
        let bad = CommandRunner()
        #expect(bad.run(["profile", chain, "--sort", "size"]) == 2)
        #expect(bad.error.contains("expected order or time"))
    }
}
