import Foundation
import LayerKit
import Testing

/// `layerkit run` on the quantized models of
/// `Scripts/generate_quantized_fixtures.py`, as a user runs them: each
/// output within its case's bound in output quanta of onnxruntime's
/// (`case.json`; QuantizedModelTests says why those bounds).
struct QuantizedModelCommandTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("LayerKitTests/Fixtures/quantized")

    struct Case: Decodable {
        let inputs: [String]
        let outputs: [String]
        let quantum: Double
        let cpu: Double
        let gpu: Double
    }

    @Test(arguments: ["cnn_qdq", "mlp_dynamic"]) func runsOnTheCPU(_ name: String) throws {
        try check(name, backend: "cpu")
    }

    @Test(.enabled(if: gpuTestsEnabled), arguments: ["cnn_qdq", "mlp_dynamic"]) func runsUnderTheGPUBackend(_ name: String) throws {
        try check(name, backend: "gpu")
    }

    /// Runs case `name` through `layerkit run` on `backend` and holds each output to its bound.
    private func check(_ name: String, backend: String) throws {
        let folder = Self.fixtures.appendingPathComponent(name)
        let description = try JSONDecoder().decode(Case.self, from: Data(contentsOf: folder.appendingPathComponent("case.json")))
        let directory = try CommandRunner.runFixture(folder, inputs: description.inputs, outputs: description.outputs,
                                                     backend: backend)
        let bound = backend == "cpu" ? description.cpu : description.gpu
        for output in description.outputs {
            let y = try Tensor(npyFile: "\(directory)/\(output).npy")
            let reference = try Tensor(npyFile: folder.appendingPathComponent("\(output).npy").path)
            #expect(y.shape == reference.shape, "\(name) \(output)")
            let off = zip(y.values, reference.values).map { abs(Double($0) - Double($1)) / description.quantum }.max() ?? 0
            #expect(off <= bound, "\(name) \(output) on \(backend): \(off) quanta off onnxruntime's (bound \(bound))")
        }
    }
}
