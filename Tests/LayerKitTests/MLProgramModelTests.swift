import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// Core ML ML Programs (`Scripts/generate_mlpackage_fixtures.py`: packages
/// coremltools wrote from MIL programs, fp32 and fp16) loaded by `Model`,
/// run on the CPU and the GPU against numpy's float64 results; and the
/// packages LayerKit refuses, each with a clear error.
@Suite struct MLProgramModelTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/mlpackage")

    static func fixture(_ name: String) -> URL { fixtures.appendingPathComponent(name) }

    static let outputs = ["SmallCNN": ["logits", "probabilities"], "StyleNet": ["image", "aligned", "half", "padded"],
                          "TinyTransformer": ["y", "mixed", "sliced", "sums"], "TorchNet": ["probs", "image"],
                          "Resized": ["strict", "aligned", "point", "default", "unaligned", "nearest", "erf"]]

    /// The largest error of `model`'s outputs against reference files
    /// `<name>-<output><suffix>.npy`, relative to max(1, |ref|).
    static func maxError(_ model: Model, _ name: String, reference suffix: String) throws -> Double {
        let input = try Tensor(npyFile: fixture("\(name)-input.npy").path)
        let results = try model.predict(inputs: [model.inputs[0].name: input])
        var worst = 0.0
        for output in outputs[name] ?? [] {
            let reference = try TypedTensor(npyFile: fixture("\(name)-\(output)\(suffix).npy").path)
            let result = try #require(results[output], "\(name): no output \(output)")
            #expect(result.shape == reference.shape, "\(name) \(output)")
            for (y, expected) in zip(result.elements, reference.doubles()) {
                worst = max(worst, abs(Double(y) - expected) / max(1, abs(expected)))
            }
        }
        return worst
    }

    /// fp32 programs against the float64 result of their weights; fp16
    /// programs, which LayerKit computes in float32 with their fp16 weights,
    /// against the float64 result of those weights ("-fp16w"): both within 1e-4.
    @Test(arguments: ["SmallCNN", "StyleNet", "TinyTransformer", "Resized"], [false, true])
    func runsAsNumpyComputesOnTheCPU(_ name: String, fp16: Bool) throws {
        let model = try Model(contentsOf: Self.fixture("\(name)\(fp16 ? "-fp16" : "").mlpackage"),
                              computeUnits: .cpuOnly, notice: { _ in })
        let error = try Self.maxError(model, name, reference: fp16 ? "-fp16w" : "")
        #expect(error <= 1e-4, "\(name) fp16 \(fp16): \(error)")
    }

    /// What fp16 weights alone move: the fp16 program against the float32
    /// weights' result is off by far more than float32 math (measured 1.0e-3
    /// to 1.7e-3), and by no more than 2.5e-3.
    @Test(arguments: ["SmallCNN", "StyleNet", "TinyTransformer"])
    func fp16WeightsMoveTheResultsByTheirRounding(_ name: String) throws {
        let model = try Model(contentsOf: Self.fixture("\(name)-fp16.mlpackage"), computeUnits: .cpuOnly, notice: { _ in })
        let error = try Self.maxError(model, name, reference: "")
        #expect(error > 1e-4 && error <= 2.5e-3, "\(name): \(error)")
    }

    /// The GPU stores values between kernels in fp16: against numpy's result
    /// with every op's output rounded to fp16, as an fp16 program computes
    /// (on lavapipe within 1.7e-3, 2.9e-3, 8.8e-3 and 7.3e-4 for the four
    /// programs). TinyTransformer's `mixed` (exp, log, pow, rsqrt, real_div of
    /// the block's output) amplifies where the rounding falls: with its layer
    /// norms, softmax and attention products on the GPU it moved from 6.5e-3
    /// to 8.8e-3, and the CPU storing every value in fp16 (`parity`'s twin) is
    /// 5.0e-3 from the CPU there, the GPU 5.0e-3 too.
    @Test(.enabled(if: TestGPU.isEnabled), arguments: ["SmallCNN", "StyleNet", "TinyTransformer", "Resized"],
          [false, true])
    func runsAsAnFP16ProgramComputesOnTheGPU(_ name: String, fp16: Bool) throws {
        let model = try Model(contentsOf: Self.fixture("\(name)\(fp16 ? "-fp16" : "").mlpackage"), computeUnits: .gpu,
                              notice: { _ in })
        #expect(model.nodes.contains { $0.placement?.isGPU == true }, "\(name): nothing ran on the GPU")
        let error = try Self.maxError(model, name, reference: "-fp16")
        #expect(error <= 1e-2, "\(name) fp16 \(fp16): \(error)")
    }

    /// A PyTorch network converted by `ct.convert(torch.jit.trace(...))`, against
    /// PyTorch's float64 result: the fp32 package within 1e-4 (measured 9e-8),
    /// the fp16 one within 5e-4 (measured 1.5e-4: its weights' rounding,
    /// after coremltools folded the batchnorm into the convolution); the GPU
    /// within 2e-3 (measured 4.6e-4).
    @Test(arguments: [false, true], [false, true])
    func aConvertedPyTorchNetworkRunsAsPyTorchComputes(fp16: Bool, gpu: Bool) throws {
        guard !gpu || TestGPU.isEnabled else { return }
        let model = try Model(contentsOf: Self.fixture("TorchNet\(fp16 ? "-fp16" : "").mlpackage"),
                              computeUnits: gpu ? .gpu : .cpuOnly, notice: { _ in })
        let error = try Self.maxError(model, "TorchNet", reference: "")
        #expect(error <= (gpu ? 2e-3 : fp16 ? 5e-4 : 1e-4), "fp16 \(fp16), gpu \(gpu): \(error)")
    }

    @Test func theProgramsInputsAndOutputsAreRead() throws {
        let model = try Model(contentsOf: Self.fixture("StyleNet.mlpackage"), computeUnits: .cpuOnly, notice: { _ in })
        #expect(model.inputs.map(\.description) == ["x: float32 [1, 3, 16, 16]"])
        #expect(model.outputs.map(\.name) == ["image", "aligned", "half", "padded"])
        let onnx = try ModelFileFormat.read(Self.fixture("StyleNet-fp16.mlpackage"))
        #expect(onnx.producerName.hasPrefix("Core ML ML Program (specification version"))
        #expect(Set(onnx.graph.nodes.map(\.opType)).isSuperset(of: ["Conv", "ConvTranspose", "InstanceNormalization",
                                                                      "Pad", "Resize", "Sigmoid"]))
    }

    /// A `.mlmodel` file holding an ML Program, all its constants immediate
    /// values: for iOS 15 (opset CoreML5) and iOS 18 (its block is CoreML8's).
    @Test(arguments: [("Scaled", "CoreML5"), ("ScaledIOS18", "CoreML8")])
    func aSingleFileProgramRuns(_ name: String, opset: String) throws {
        let data = try Data(contentsOf: Self.fixture("\(name).mlmodel"))
        #expect(ModelFileFormat.of(data, name: "model.bin") == .coreMLProgram)
        #expect(try ModelFileFormat.decode(data, name: "\(name).mlmodel").producerName.contains("opset \(opset))"))
        let model = try Model(data: data, name: "\(name).mlmodel", computeUnits: .cpuOnly, notice: { _ in })
        let input = try Tensor(npyFile: Self.fixture("\(name)-input.npy").path)
        let y = try #require(try model.predict(inputs: ["x": input])["y"])
        let reference = try TypedTensor(npyFile: Self.fixture("\(name)-y.npy").path).doubles()
        #expect(zip(y.elements, reference).allSatisfy { abs(Double($0) - $1) <= 1e-6 }, "\(y.elements) vs \(reference)")
    }

    @Test func anOpNotTranslatedIsNamedWithTheListOfThoseThatAre() throws {
        let error = #expect(throws: LayerKitError.self) {
            try Model(contentsOf: Self.fixture("Unsupported.mlpackage"), computeUnits: .cpuOnly, notice: { _ in })
        }
        let text = "\(error.map { "\($0)" } ?? "")"
        #expect(text.contains("Unsupported.mlpackage/Data/com.apple.CoreML/model.mlmodel: op 'y' (cumsum): ops of type "
                              + "cumsum are not supported by LayerKit (supported: abs, add, avg_pool"), "\(text)")
    }

    // MARK: Hostile packages

    /// Runs `body` on a copy of the SmallCNN package named `name` in a scratch folder.
    static func withCopy<T>(named name: String, _ body: (URL) throws -> T) throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mlpackage-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let package = folder.appendingPathComponent(name)
        try FileManager.default.copyItem(at: fixture("SmallCNN.mlpackage"), to: package)
        return try body(package)
    }

    /// The error loading a copy of the SmallCNN package changed by `change`.
    static func loadingError(_ change: (URL) throws -> Void) throws -> String {
        try withCopy(named: "Hostile.mlpackage") { package in
            try change(package)
            do {
                _ = try Model(contentsOf: package, computeUnits: .cpuOnly, notice: { _ in })
            } catch let error as LayerKitError {
                return error.description
            }
            Issue.record("the package loaded")
            return ""
        }
    }

    static func weights(_ package: URL) -> URL { package.appendingPathComponent("Data/com.apple.CoreML/weights/weight.bin") }

    /// Replaces the bytes of `file` at `offset` with `bytes`.
    static func patch(_ file: URL, at offset: Int, _ bytes: [UInt8]) throws {
        var data = [UInt8](try Data(contentsOf: file))
        data.replaceSubrange(offset..<offset + bytes.count, with: bytes)
        try Data(data).write(to: file)
    }

    @Test func aPackageWithoutManifestIsRefused() throws {
        let text = try Self.loadingError { try FileManager.default.removeItem(at: $0.appendingPathComponent("Manifest.json")) }
        #expect(text.contains("Hostile.mlpackage: the package has no Manifest.json"), "\(text)")
    }

    @Test func aManifestPointingOutsideThePackageIsRefused() throws {
        let text = try Self.loadingError { package in
            let manifest = package.appendingPathComponent("Manifest.json")
            let json = try String(contentsOf: manifest, encoding: .utf8)
                .replacingOccurrences(of: "\"com.apple.CoreML/model.mlmodel\"", with: "\"../../outside.mlmodel\"")
            try json.write(to: manifest, atomically: true, encoding: .utf8)
        }
        #expect(text.contains("the root model's path '../../outside.mlmodel' leaves Hostile.mlpackage"), "\(text)")
    }

    @Test func aWeightsFileNamedOutsideThePackageIsRefused() throws {
        let text = try Self.loadingError { package in
            let model = package.appendingPathComponent("Data/com.apple.CoreML/model.mlmodel")
            var bytes = [UInt8](try Data(contentsOf: model))
            // The same length, so the protobuf's lengths still hold.
            let (from, to) = (Array("@model_path/weights/weight.bin".utf8), Array("@model_path/../../../../ab.bin".utf8))
            for i in 0...(bytes.count - from.count) where Array(bytes[i..<i + from.count]) == from {
                bytes.replaceSubrange(i..<i + from.count, with: to)
            }
            try Data(bytes).write(to: model)
        }
        #expect(text.contains("weights file '@model_path/../../../../ab.bin' leaves Hostile.mlpackage"), "\(text)")
    }

    @Test func aRecordPastTheEndOfTheWeightsFileIsRefused() throws {
        let text = try Self.loadingError { package in
            let data = try Data(contentsOf: Self.weights(package))
            try data.prefix(100).write(to: Self.weights(package))
        }
        #expect(text.contains("weights/weight.bin") && text.contains("is not within the file (100 bytes"), "\(text)")
    }

    @Test func aWrongSentinelIsRefused() throws {
        let text = try Self.loadingError { try Self.patch(Self.weights($0), at: 64, [0xEF, 0xBE, 0xAD, 0xDF]) }
        #expect(text.contains("the record at offset 64 has sentinel 0xdfadbeef, not 0xdeadbeef"), "\(text)")
    }

    @Test func aHugeDeclaredSizeIsRefused() throws {
        let text = try Self.loadingError { try Self.patch(Self.weights($0), at: 64 + 8, [0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]) }
        #expect(text.contains("declares 9223372036854775552 bytes at offset 128, past the end of the file"), "\(text)")
    }

    @Test func aTruncatedProgramIsRefusedNamingTheByte() throws {
        let text = try Self.loadingError { package in
            let model = package.appendingPathComponent("Data/com.apple.CoreML/model.mlmodel")
            try Data(contentsOf: model).prefix(300).write(to: model)
        }
        #expect(text.contains("Hostile.mlpackage/Data/com.apple.CoreML/model.mlmodel:") && text.contains("at byte"),
                "\(text)")
    }

    /// Recognized by its layout: a folder with a Manifest.json loads whatever its name.
    @Test func aRenamedPackageLoads() throws {
        try Self.withCopy(named: "renamed") { package in
            #expect(ModelFileFormat.isPackage(package))
            let model = try Model(contentsOf: package, computeUnits: .cpuOnly, notice: { _ in })
            #expect(model.outputs.map(\.name) == ["logits", "probabilities"])
        }
    }
}
