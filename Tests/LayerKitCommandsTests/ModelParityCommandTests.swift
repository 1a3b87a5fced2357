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
