import Foundation
import Testing
@testable import LayerKit

/// If, Loop and Scan against onnxruntime's outputs (`Fixtures/control-flow`,
/// `Scripts/generate_control_flow_fixtures.py`): bodies reading outer values
/// (a graph input, an initializer, a value computed earlier), an If nested in
/// a Loop, a carried value growing per iteration, a condition ending a Loop
/// before a huge trip count, Scan axes and directions. And the hostile models
/// LayerKit must refuse clearly.
@Suite struct ControlFlowTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/control-flow")

    static let cases: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
        .filter { !$0.hasPrefix("hostile-") && !$0.hasSuffix(".md") }.sorted()

    struct Case: Decodable {
        let inputs: [String]
        let outputs: [String]
    }

    @Test func thereAreCases() { #expect(Self.cases.count >= 5) }

    @Test(arguments: cases) func matchesOnnxruntime(_ name: String) throws {
        let folder = Self.directory.appendingPathComponent(name)
        let description = try JSONDecoder().decode(Case.self, from: Data(contentsOf: folder.appendingPathComponent("case.json")))
        let model = try Model(contentsOf: folder.appendingPathComponent("model.onnx"), computeUnits: .cpuOnly)
        var inputs: [String: TypedTensor] = [:]
        for input in description.inputs {
            inputs[input] = try TypedTensor(npyFile: folder.appendingPathComponent(input + ".npy").path)
        }
        let outputs = try model.predict(typed: inputs)
        for output in description.outputs {
            let reference = try TypedTensor(npyFile: folder.appendingPathComponent(output + ".npy").path)
            let value = try #require(outputs[output])
            #expect(value.shape == reference.shape, "\(name) \(output): \(value.shape) vs \(reference.shape)")
            guard value.shape == reference.shape else { continue }
            for k in 0..<reference.count {
                let (got, expected) = (value.double(at: k), reference.double(at: k))
                #expect(abs(got - expected) <= 1e-5 * max(1, abs(expected)), "\(name) \(output)[\(k)]: \(got) vs \(expected)")
            }
        }
    }

    /// The error loading (or running, with `inputs`) hostile model `name`.
    static func refusal(_ name: String, inputs: [String: TypedTensor] = [:]) -> String? {
        do {
            let model = try Model(contentsOf: directory.appendingPathComponent("hostile-\(name)/model.onnx"),
                                  computeUnits: .cpuOnly)
            _ = try model.predict(typed: inputs)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func aBodyReadingAMissingOuterNameIsRefused() throws {
        let message = Self.refusal("missing_outer_name", inputs: ["x": try TypedTensor(.float32, shape: [1], doubles: [1]),
                                                                  "c": try TypedTensor(.bool, shape: [], integers: [1])])
        #expect(message?.contains("reads 'nowhere', which no input, initializer or earlier node makes") == true,
                "\(message ?? "no error")")
    }

    @Test func nestingPastTheReadersDepthIsRefused() {
        let message = Self.refusal("deep_nesting")
        #expect(message?.contains("messages nested more than 64 deep") == true, "\(message ?? "no error")")
    }

    @Test func aLoopThatNeverEndsStopsAtTheIterationLimit() throws {
        let message = Self.refusal("endless_loop", inputs: ["x": try TypedTensor(.float32, shape: [1], doubles: [1])])
        #expect(message?.contains("runs past \(ONNXSubgraph.maxIterations) iterations") == true, "\(message ?? "no error")")
    }

    /// On a GPU backend a Scan stays on the CPU, and the placement says why.
    @Test func placementNamesControlFlowAsCPUOnly() throws {
        let backend = try Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in })
        let url = Self.directory.appendingPathComponent("scan_axes_directions/model.onnx")
        let model = try Model(data: Data(contentsOf: url), name: "scan", backend: backend)
        let node = try #require(model.nodes.first { $0.opType == "Scan" })
        #expect(node.placement != .gpu)
        #expect(node.cpuReason == ONNXSubgraph.whyOnCPU)
    }
}
