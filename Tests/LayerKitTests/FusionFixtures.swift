import Foundation
import Testing
@testable import LayerKit

/// A family of fusion fixtures (a folder of onnx-cases written by a
/// Scripts/onnx_cases script) and the steps each model must become at
/// import, by op type in order: the epilogue and attention fusions' suites
/// check theirs the same way.
struct FusionFixtures: Sendable {
    let root: URL
    let expected: [String: [String]]

    init(family: String, expected: [String: [String]]) {
        root = ONNXCaseTests.root.appendingPathComponent(family)
        self.expected = expected
    }

    var names: [String] { expected.keys.sorted() }

    func model(_ name: String) -> URL { root.appendingPathComponent(name).appendingPathComponent("model.onnx") }

    /// Expects the family's case folders to be exactly the listed ones.
    func expectEveryFixtureListed() throws {
        let cases = try ONNXTestCase.cases(in: root).map(\.name).sorted()
        #expect(cases == names)
    }

    /// Fixture `name` loaded on a CPU backend, its steps expected to be the
    /// listed ones, and how its run compares with the stored outputs.
    func loadedOnTheCPU(_ name: String) throws -> (model: Model, outcome: ONNXTestCase.Outcome) {
        let backend = try Backend(computeUnits: .cpuOnly, notice: { _ in })
        let model = try Model(contentsOf: model(name), backend: backend)
        #expect(model.nodes.map(\.opType) == expected[name], "\(name): \(model.nodes.map(\.opType))")
        return (model, ONNXTestCase(folder: root.appendingPathComponent(name)).run(on: backend))
    }
}
