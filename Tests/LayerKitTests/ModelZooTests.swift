import Foundation
import Testing
@testable import LayerKit

/// Whole models (Fixtures/onnx-cases/zoo, written by Scripts/export_torchvision.py
/// --narrow; ONNXCaseTests runs them): the `tolerance.json` a case may carry,
/// and what the committed zoo must stay.
@Suite struct ModelZooTests {
    static let cases = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/onnx-cases")

    /// A copy of the core case `conv_relu` with `tolerance` as its tolerance.json.
    private func caseWith(tolerance: String?) throws -> (ONNXTestCase, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        let folder = URL(fileURLWithPath: directory.file("conv_relu"))
        try FileManager.default.copyItem(at: ModelZooTests.cases.appendingPathComponent("core/conv_relu"), to: folder)
        if let tolerance {
            try Data(tolerance.utf8).write(to: folder.appendingPathComponent("tolerance.json"))
        }
        return (ONNXTestCase(folder: folder), directory)
    }

    @Test func toleranceJSONIsRead() throws {
        let (plain, d1) = try caseWith(tolerance: nil)
        defer { d1.remove() }
        #expect(try plain.tolerance() == nil)
        let (given, d2) = try caseWith(tolerance: #"{"gpu": 0.0025, "fp16_twin_error": 0.00125}"#)
        defer { d2.remove() }
        #expect(try given.tolerance() == ONNXTestCase.Tolerance(gpu: 0.0025))
    }

    @Test func aBadToleranceIsAnErrorNamingTheFile() throws {
        for text in [#"{"gpu": -1}"#, #"{"gpu": "big"}"#, #"{"cpu": 0}"#, "[1]", "not json"] {
            let (testCase, directory) = try caseWith(tolerance: text)
            defer { directory.remove() }
            #expect {
                try testCase.tolerance()
            } throws: { error in
                "\(error)".contains("tolerance.json")
            }
        }
    }

    /// With tolerance.json the GPU is compared with the stored outputs at
    /// that tolerance (and not by the parity rule): a tolerance far below
    /// fp16's rounding fails, a wide one passes.
    @Test(.enabled(if: TestGPU.isEnabled)) func theGPUIsHeldToTheCasesTolerance() throws {
        let cpu = try Backend(computeUnits: .cpuOnly, notice: { _ in })
        let gpu = try Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in })
        let (tight, d1) = try caseWith(tolerance: #"{"gpu": 1e-9}"#)
        defer { d1.remove() }
        let failed = tight.run(on: gpu, gpuParityAgainst: cpu)
        #expect(!failed.passed)
        #expect(failed.message.contains("the tolerance"), "\(failed.message)")
        let (wide, d2) = try caseWith(tolerance: #"{"gpu": 0.01}"#)
        defer { d2.remove() }
        let passed = wide.run(on: gpu, gpuParityAgainst: cpu)
        #expect(passed.passed, "\(passed.message)")
        #expect(passed.worstRatio > 0 && passed.worstRatio < 1)
        // Without a "cpu" value the CPU keeps ONNX's backend-test tolerance;
        // with one, it is held to it.
        #expect(tight.run(on: cpu).passed)
        let (cpuTight, d3) = try caseWith(tolerance: #"{"gpu": 0.01, "cpu": 1e-12}"#)
        defer { d3.remove() }
        #expect(try cpuTight.tolerance() == ONNXTestCase.Tolerance(gpu: 0.01, cpu: 1e-12))
        #expect(!cpuTight.run(on: cpu).passed)
        #expect(cpuTight.run(on: gpu, gpuParityAgainst: cpu).passed)
    }

    /// Every zoo case carries its fp16-twin tolerance, and the committed
    /// folder stays small (the full-size exports live in .build).
    @Test func theZooIsSmallAndEveryCaseHasATolerance() throws {
        let zoo = ModelZooTests.cases.appendingPathComponent("zoo")
        let cases = try ONNXTestCase.cases(in: zoo)
        #expect(cases.count >= 18, "\(cases.count) zoo cases")
        for testCase in cases {
            let tolerance = try testCase.tolerance()
            #expect(tolerance?.gpu != nil && tolerance?.cpu != nil,
                    "\(testCase.name) has no tolerance.json with gpu and cpu values")
        }
        var bytes = 0
        let enumerator = FileManager.default.enumerator(at: zoo, includingPropertiesForKeys: [.fileSizeKey])
        while let file = enumerator?.nextObject() as? URL {
            bytes += (try file.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0
        }
        #expect(bytes < 6_500_000, "the zoo is \(bytes) bytes")
    }
}
