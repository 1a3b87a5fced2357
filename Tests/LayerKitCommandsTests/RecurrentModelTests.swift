import Foundation
import LayerKit
import Testing

/// `layerkit run` on the recurrent fixtures of
/// `Scripts/generate_recurrent_fixtures.py`: PyTorch's LSTM and GRU
/// classifiers through both exporters against the modules in float64, and
/// one LSTM, GRU or RNN node per attribute set against onnxruntime. Each
/// output is within `cpu` (1e-4) of the reference on the CPU, within the
/// case's fp16-twin bound `gpu` under `--backend gpu`, measured as
/// `max |y - ref| / max(1, |ref|)`.
struct RecurrentModelTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("LayerKitTests/Fixtures/recurrent")

    /// Every case folder.
    static let cases: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: fixtures.path)) ?? []
        return names.filter { !$0.hasSuffix(".md") }.sorted()
    }()

    /// A case's graph input and output names, and its bounds.
    struct Case: Decodable {
        let inputs: [String]
        let outputs: [String]
    }

    struct Tolerance: Decodable {
        let cpu: Double
        let gpu: Double
    }

    @Test func everyCaseOfTheScriptIsHere() {
        for name in ["lstm_classifier_torchscript", "lstm_classifier_dynamo", "gru_classifier_torchscript",
                     "gru_classifier_dynamo", "lstm_attributes", "gru_attributes", "rnn_attributes", "lstm_wide"] {
            #expect(Self.cases.contains(name), "missing \(name)")
        }
    }

    @Test(arguments: cases) func runsOnTheCPU(_ name: String) throws {
        try check(name, backend: "cpu")
    }

    @Test(.enabled(if: gpuTestsEnabled), arguments: cases) func runsUnderTheGPUBackend(_ name: String) throws {
        try check(name, backend: "gpu")
    }

    /// Runs case `name` through `layerkit run` on `backend` and holds each output to its reference.
    private func check(_ name: String, backend: String) throws {
        let folder = Self.fixtures.appendingPathComponent(name)
        let description = try JSONDecoder().decode(Case.self, from: Data(contentsOf: folder.appendingPathComponent("case.json")))
        let tolerance = try JSONDecoder().decode(Tolerance.self,
                                                 from: Data(contentsOf: folder.appendingPathComponent("tolerance.json")))
        let directory = try CommandRunner.runFixture(folder, inputs: description.inputs, outputs: description.outputs,
                                                     backend: backend)
        let bound = backend == "cpu" ? tolerance.cpu : tolerance.gpu
        for output in description.outputs {
            let y = try Tensor(npyFile: "\(directory)/\(output).npy")
            let reference = try TypedTensor(npyFile: folder.appendingPathComponent("\(output).npy").path)
            #expect(y.shape == reference.shape, "\(name) \(output)")
            let expected = reference.doubles()
            var worst = 0.0
            for (a, e) in zip(y.values, expected) { worst = max(worst, abs(Double(a) - e) / max(1, abs(e))) }
            #expect(worst <= bound, "\(name) \(output) on \(backend): \(worst) > \(bound)")
        }
    }
}
