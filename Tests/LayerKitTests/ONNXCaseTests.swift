import Foundation
import Testing
@testable import LayerKit

/// Every reference case under Fixtures/onnx-cases/<family>/<case> (written
/// by Scripts/onnx_cases/<family>.py from onnxruntime's outputs), on the
/// CPU against onnxruntime at ONNX's backend-test tolerance, and on the GPU
/// by the parity rule against the CPU on the same fp16-rounded inputs.
@Suite struct ONNXCaseTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/onnx-cases")

    /// `family/case` for every case of every family.
    static let cases: [String] = {
        let families = ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []).sorted()
        return families.flatMap { family in
            ((try? ONNXTestCase.cases(in: root.appendingPathComponent(family))) ?? []).map { "\(family)/\($0.name)" }
        }
    }()

    static let cpu = Result { try Backend(computeUnits: .cpuOnly, notice: { _ in }) }
    static let gpu = Result { try Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in }) }

    @Test func theCasesAreFound() {
        #expect(!ONNXCaseTests.cases.isEmpty, "no case under \(ONNXCaseTests.root.path)")
    }

    @Test(arguments: cases)
    func cpuMatchesOnnxRuntime(_ name: String) throws {
        let outcome = ONNXTestCase(folder: ONNXCaseTests.root.appendingPathComponent(name))
            .run(on: try ONNXCaseTests.cpu.get())
        #expect(outcome.passed, "\(name): \(outcome.message)")
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: cases)
    func gpuMeetsTheParityRule(_ name: String) throws {
        let outcome = ONNXTestCase(folder: ONNXCaseTests.root.appendingPathComponent(name))
            .run(on: try ONNXCaseTests.gpu.get(), gpuParityAgainst: try ONNXCaseTests.cpu.get())
        #expect(outcome.passed, "\(name): \(outcome.message)")
    }
}
