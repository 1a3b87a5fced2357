import Foundation
import Testing
import LayerKit
@testable import LayerKitCommands

/// A layer whose GPU and CPU versions disagree by 1%, to prove that
/// `parity` can fail.
final class DisagreeingLayer: CustomLayer {
    static let name = "DisagreeingForTests"
    init(parameters: [String: Any]) throws {}
    func setWeightData(_ weights: [Data]) throws {}
    func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] { inputShapes }
    func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        for (input, output) in zip(inputs, outputs) {
            for i in 0..<input.count { output[i] = input[i] }
        }
    }
    var hasGPUImplementation: Bool { true }
    func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        for (input, output) in zip(inputs, outputs) {
            try commandBuffer.dispatch(PerElementKernel(name: Self.name, body: "x * 1.01"), input: input, output: output)
        }
    }
}

/// Whether GPU-dependent command tests run (see LayerKitTests' TestGPU).
let gpuTestsEnabled: Bool = {
    (try? GPUContext()) != nil || ProcessInfo.processInfo.environment["LAYERKIT_ALLOW_NO_GPU"] != "1"
}()

@Suite(.enabled(if: gpuTestsEnabled))
struct ParityAndDemoCommandTests {
    @Test(arguments: [["--param", "beta=1"], ["--param", "beta=0.01"], ["--param", "beta=3"]])
    func parityPassesForSwish(parameters: [String]) throws {
        let runner = CommandRunner()
        let status = runner.run(["parity", "--op", "swish", "--shape", "2x5x17x9", "--seed", "4"] + parameters)
        #expect(status == 0, "\(runner.out)\(runner.error)")
        for field in ["max abs error", "max rel error", "max fp16 ulps", "NMSE", "PASS"] {
            #expect(runner.out.contains(field), "missing \(field)")
        }
    }

    @Test func parityWithPerChannelWeights() throws {
        let directory = try CommandRunner.scratchDirectory()
        try writeNPY([0.5, 1, 2, 3, 0.1, 2.5], shape: [6], to: "\(directory)/beta.npy")
        let runner = CommandRunner()
        #expect(runner.run(["parity", "--op", "swish", "--weights", "beta=\(directory)/beta.npy",
                            "--shape", "1x6x8x8"]) == 0, "\(runner.out)\(runner.error)")
    }

    @Test func parityFailsWithExitStatusOneWhenGPUAndCPUDisagree() throws {
        LayerRegistry.shared.register(DisagreeingLayer.self)
        let runner = CommandRunner()
        #expect(runner.run(["parity", "--op", DisagreeingLayer.name, "--shape", "1x4x8x8"]) == 1)
        #expect(runner.out.contains("FAIL"))
    }

    @Test(arguments: [["--shape", "0x3"], ["--shape", "1x2x3x4x5"], ["--shape", "abc"],
                      ["--range", "5,1"], ["--range", "1"], ["--seed", "-3"]])
    func parityRejectsNonsenseOptions(options: [String]) throws {
        let runner = CommandRunner()
        #expect(runner.run(["parity", "--op", "swish"] + options) == 2)
        #expect(runner.error.contains(options[0]), "\(runner.error)")
    }

    @Test func demoRunsTheArticleModelOnBothBackends() throws {
        let directory = try CommandRunner.scratchDirectory()
        let runner = CommandRunner()
        #expect(runner.run(["demo", "--output", "\(directory)/p.npy"]) == 0, "\(runner.out)\(runner.error)")
        #expect(runner.out.contains("parity: PASS"))
        #expect(runner.out.contains("Conv -> Swish (custom, layerkit) -> GlobalAveragePool -> Flatten -> Gemm -> Softmax"))
        for layer in ["conv (Conv)", "swish (layerkit.Swish)", "pool (GlobalAveragePool)", "flatten (Flatten)",
                      "fc (Gemm)", "softmax (Softmax)"] {
            #expect(runner.out.contains("\n\(layer) "), "no timing row for \(layer)")
        }
        // Ten softmax probabilities.
        let predictions = try Tensor(npyFile: "\(directory)/p.npy")
        #expect(predictions.shape == [1, 10])
        #expect(abs(predictions.values.reduce(0, +) - 1) < 1e-2)
        #expect(predictions.values.allSatisfy { $0 > 0 && $0 < 1 })
    }

    @Test func demoRefusesAnOutputItCannotWrite() throws {
        let runner = CommandRunner()
        #expect(runner.run(["demo", "--output", "/tmp/predictions.png"]) == 2)
        #expect(runner.error.contains(".npy"))
    }

    @Test func devicesListsTheChosenDevice() throws {
        let runner = CommandRunner()
        #expect(runner.run(["devices"]) == 0)
        for field in ["type:", "shaderFloat16:", "rgba16f storage images:", "timestamps:", "chosen: [", "by the most preferred"] {
            #expect(runner.out.contains(field), "missing \(field)")
        }
    }

    @Test func devicesHonoursLAYERKIT_DEVICE() throws {
        let byIndex = try CommandRunner.runExecutable(["devices"], environment: ["LAYERKIT_DEVICE": "0"])
        #expect(byIndex.status == 0, "\(byIndex.error)")
        #expect(byIndex.out.contains("* [0]") && byIndex.out.contains("chosen: [0]"), "\(byIndex.out)")
        #expect(byIndex.out.contains("by LAYERKIT_DEVICE=0"), "\(byIndex.out)")
        let none = try CommandRunner.runExecutable(["devices"], environment: ["LAYERKIT_DEVICE": "no-such-device"])
        #expect(none.status == 0)
        #expect(none.out.contains("chosen: none (LAYERKIT_DEVICE=no-such-device: 'no-such-device' matches no Vulkan device"),
                "\(none.out)")
        // The same variable steers what runs: a GPU run then fails, naming it.
        let run = try CommandRunner.runExecutable(["bench", "--op", "Relu", "--shape", "1x1x2x2", "--repeat", "1",
                                                   "--backend", "gpu"], environment: ["LAYERKIT_DEVICE": "no-such-device"])
        #expect(run.status == 1)
        #expect(run.error.contains("no-such-device"), "\(run.error)")
    }
}

/// With no Vulkan driver at all (the ICD list points nowhere), everything
/// runs on the CPU with a notice, except what needs the GPU, which fails clearly.
struct NoDriverTests {
    static let noDriver = ["VK_ICD_FILENAMES": "/nonexistent", "VK_DRIVER_FILES": "/nonexistent"]

    @Test func applyFallsBackToTheCPUWithANotice() throws {
        let directory = try CommandRunner.scratchDirectory()
        try writeNPY([-1, 0, 1, 2], shape: [1, 1, 2, 2], to: "\(directory)/x.npy")
        let result = try CommandRunner.runExecutable(
            ["apply", "--op", "swish", "--input", "\(directory)/x.npy", "--output", "\(directory)/y.npy"],
            environment: Self.noDriver)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.error.contains("runs on the CPU"))
        #expect(result.error.split(separator: "\n").count == 1)
    }

    @Test func backendGPUFailsClearly() throws {
        let directory = try CommandRunner.scratchDirectory()
        try writeNPY([1], shape: [1], to: "\(directory)/x.npy")
        let result = try CommandRunner.runExecutable(
            ["apply", "--op", "swish", "--backend", "gpu", "--input", "\(directory)/x.npy",
             "--output", "\(directory)/y.npy"], environment: Self.noDriver)
        #expect(result.status == 1)
        #expect(result.error.contains("no usable Vulkan device"))
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/y.npy"))
    }

    @Test func parityNeedsAGPU() throws {
        let result = try CommandRunner.runExecutable(["parity", "--op", "swish"], environment: Self.noDriver)
        #expect(result.status == 1)
        #expect(result.error.contains("parity needs a GPU"))
    }

    @Test func demoStillRunsOnTheCPU() throws {
        let directory = try CommandRunner.scratchDirectory()
        let result = try CommandRunner.runExecutable(["demo", "--output", "\(directory)/d.npy"],
                                                     environment: Self.noDriver)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.error.contains("no GPU"))
        #expect(FileManager.default.fileExists(atPath: "\(directory)/d.npy"))
    }
}
