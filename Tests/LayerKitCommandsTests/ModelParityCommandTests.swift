import Foundation
import LayerKit
import Testing

/// `layerkit parity MODEL.onnx`: the model on the GPU and on the CPU, the
/// same fp16-rounded inputs, a report and a verdict per output.
@Suite(.enabled(if: gpuTestsEnabled))
struct ModelParityCommandTests {
    static let article = ModelCommandTests.fixture("article_beta1.onnx")
    static let articleInput = ModelCommandTests.fixture("article_beta1.input.npy")

    @Test(arguments: [[], ["--input", articleInput], ["--input", "image=\(articleInput)", "--threads", "2"]])
    func theArticleModelPasses(options: [String]) throws {
        let runner = CommandRunner()
        #expect(runner.run(["parity", Self.article] + options) == 0, "\(runner.out)\(runner.error)")
        for field in ["model: \(Self.article)", "device: ", "output '", "max abs error", "max rel error",
                      "max fp16 ulps", "NMSE", "PASS: every element within |gpu-cpu| <= 0.001 * max(1,|cpu|)",
                      "PASS: all 1 output within the parity rule"] {
            #expect(runner.out.contains(field), "missing \(field) in \(runner.out)")
        }
        #expect(runner.out.contains(options.isEmpty ? "seeded uniform [0, 1)" : Self.articleInput))
    }

    @Test func aCustomNodeRunsAsTheFormulaOfLayer() throws {
        let (model, input, _) = try ModelLayerOptionTests.files(attribute: 1.5, weights: nil)
        for inputs in [[], ["--input", input]] {
            let runner = CommandRunner()
            #expect(runner.run(["parity", model, "--layer", ModelLayerOptionTests.formula] + inputs) == 0,
                    "\(runner.out)\(runner.error)")
            #expect(runner.out.contains("output 'y' 1x3x2x2:"), "\(runner.out)")
            #expect(runner.out.contains("PASS: all 1 output"), "\(runner.out)")
        }
        let without = CommandRunner()
        #expect(without.run(["parity", model]) == 1)
        #expect(without.error.contains("ArticleSwish"), "\(without.error)")
    }

    /// `(x + 1000) - 1000` with a pooling between the two, so the GPU stores
    /// `x + 1000` in fp16 (a 0.5 or 1 step there): the output is off by up to
    /// 0.25 at x = 0.25, far past the per-layer 1e-3, and exactly what fp16 storage
    /// explains. The CPU's fp16 twin shows that error, computed here
    /// independently with Swift's Float16, and `parity` passes the GPU
    /// within twice it.
    @Test func aWholeModelIsHeldToWhatItsFP16TwinExplains() throws {
        let directory = try CommandRunner.scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let model = "\(directory)/offset.onnx"
        try TinyONNX.chain([TinyONNX.Node(opType: "Add", constants: ["offset": [1000]]),
                            TinyONNX.Node(opType: "GlobalAveragePool"),
                            TinyONNX.Node(opType: "Sub", constants: ["offset2": [1000]])], shape: [1, 64, 1, 1])
            .write(to: URL(fileURLWithPath: model))
        // Quarters: exact in fp16, and 1000 + x exact in fp32.
        let x = try Tensor(shape: [1, 64, 1, 1], values: (0..<64).map { Float($0) + 0.25 })
        let cpu = try Model(contentsOf: URL(fileURLWithPath: model), computeUnits: .cpuOnly)
        let twin = try #require(try cpu.predictStoringHalf(inputs: ["x": x])["y"])
        let expected = x.values.map { Float(Float16($0 + 1000)) - 1000 }
        #expect(twin.values == expected)
        let twinError = zip(expected, x.values).map { abs(Double($0 - $1)) }.max() ?? 0
        #expect(twinError > 0.1, "the model should lose more than 1e-3 to fp16 storage")
        // The plain CPU run keeps x exactly: 1000 + x fits fp32.
        #expect(try cpu.predict(inputs: ["x": x])["y"]?.values == x.values)

        let input = "\(directory)/x.npy"
        try x.writeNPY(to: input)
        let runner = CommandRunner()
        #expect(runner.run(["parity", model, "--input", input]) == 0, "\(runner.out)\(runner.error)")
        #expect(runner.out.contains("fp16 twin error:       \(String(format: "%.3e", twinError))"), "\(runner.out)")
        #expect(runner.out.contains("PASS: all 1 output within the parity rule"), "\(runner.out)")
    }

    @Test func aDisagreeingNodeFailsWithExitStatusOne() throws {
        LayerRegistry.shared.register(DisagreeingLayer.self)
        let directory = try CommandRunner.scratchDirectory()
        let model = "\(directory)/disagreeing.onnx"
        try TinyONNX.model(opType: DisagreeingLayer.name, domain: "com.example", shape: [1, 2, 4, 4], attributes: [:],
                           constants: [:]).write(to: URL(fileURLWithPath: model))
        let runner = CommandRunner()
        #expect(runner.run(["parity", model]) == 1, "\(runner.out)\(runner.error)")
        #expect(runner.out.contains("FAIL: 1 of 1 outputs outside the parity rule (y)"), "\(runner.out)")
    }

    @Test func anUnknownInputNameIsACommandLineError() throws {
        let runner = CommandRunner()
        #expect(runner.run(["parity", Self.article, "--input", "imag=\(Self.articleInput)"]) == 2)
        #expect(runner.error.contains("--input imag=\(Self.articleInput): the model has no input 'imag'"),
                "\(runner.error)")
    }
}

/// What is refused before any model is loaded, and a missing GPU.
struct ModelParityCommandLineTests {
    @Test(arguments: [["--op", "swish"], ["--expr", "x"], ["--all"], ["--shape", "1x3x4x4"], ["--seed", "2"]])
    func aLayerOptionWithAModelIsACommandLineError(options: [String]) throws {
        let runner = CommandRunner()
        #expect(runner.run(["parity", ModelParityCommandTests.article] + options) == 2)
        #expect(runner.error.contains("\(options[0]) compares one layer"), "\(runner.error)")
    }

    @Test(arguments: [["--input", "x.npy"], ["--layer", "A=x"]])
    func aModelOptionWithoutAModelIsACommandLineError(options: [String]) throws {
        let runner = CommandRunner()
        #expect(runner.run(["parity", "--op", "swish"] + options) == 2)
        #expect(runner.error.contains("\(options[0]) is for a model"), "\(runner.error)")
    }

    @Test func twoModelsAreACommandLineError() throws {
        let runner = CommandRunner()
        #expect(runner.run(["parity", ModelParityCommandTests.article, ModelParityCommandTests.article]) == 2)
        #expect(runner.error.contains("unexpected argument"), "\(runner.error)")
    }

    @Test func aModelNeedsAGPU() throws {
        let result = try CommandRunner.runExecutable(["parity", ModelParityCommandTests.article],
                                                     environment: NoDriverTests.noDriver)
        #expect(result.status == 1)
        #expect(result.error.contains("parity needs a GPU: no usable Vulkan device"), "\(result.error)")
        #expect(result.error.split(separator: "\n").count == 1, "\(result.error)")
        #expect(result.out.isEmpty)
    }
}
