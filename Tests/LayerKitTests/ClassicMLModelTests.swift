import Foundation
import Testing
@testable import LayerKit

/// scikit-learn's classic models as skl2onnx exports them, against
/// scikit-learn's own results (`Fixtures/classic-ml`,
/// `Scripts/generate_classic_ml_fixtures.py`): every case of a family runs
/// through `Model.predict(typed:)` on the CPU; labels must equal
/// scikit-learn's, scores be within 1e-5 of max(1, |reference|).
@Suite struct ClassicMLModelTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/classic-ml")

    static let cases: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()

    static func cases(_ family: String) -> [String] { cases.filter { $0.hasPrefix(family + "-") } }

    /// The worst relative error of `name`'s outputs against scikit-learn's;
    /// labels (integer outputs) must be equal. Each output's error is printed.
    @discardableResult
    static func check(_ name: String, computeUnits: ComputeUnits = .cpuOnly) throws -> Double {
        let folder = directory.appendingPathComponent(name)
        let model = try Model(contentsOf: folder.appendingPathComponent("model.onnx"), computeUnits: computeUnits)
        let x = try TypedTensor(npyFile: folder.appendingPathComponent("x.npy").path)
        let outputs = try model.predict(typed: [model.inputs[0].name: x])
        var worst = 0.0
        for description in model.outputs {
            let reference = try TypedTensor(npyFile: folder.appendingPathComponent("sklearn_\(description.name).npy").path)
            let output = try #require(outputs[description.name])
            #expect(output.shape == reference.shape, "\(name) \(description.name): \(output.shape) vs \(reference.shape)")
            guard output.shape == reference.shape else { continue }
            if reference.elementType == .int64 {
                #expect(output.integers() == reference.integers(), "\(name) \(description.name)")
                continue
            }
            var error = 0.0
            for k in 0..<reference.count {
                let (value, expected) = (output.double(at: k), reference.double(at: k))
                error = max(error, abs(value - expected) / max(1, abs(expected)))
            }
            #expect(error <= 1e-5, "\(name) \(description.name): relative error \(error)")
            print("classic-ml \(name) \(description.name): max relative error \(error)")
            worst = max(worst, error)
        }
        return worst
    }

    @Test func everyFamilyHasCases() {
        for family in ["trees", "svm", "kmeans", "preprocessing"] { #expect(!Self.cases(family).isEmpty, "\(family)") }
    }

    @Test(arguments: cases("trees")) func treesMatchScikitLearn(_ name: String) throws { try Self.check(name) }

    @Test(arguments: cases("svm")) func svmsMatchScikitLearn(_ name: String) throws { try Self.check(name) }

    @Test(arguments: cases("kmeans")) func kMeansMatchesScikitLearn(_ name: String) throws { try Self.check(name) }

    @Test(arguments: cases("preprocessing")) func preprocessingMatchesScikitLearn(_ name: String) throws {
        try Self.check(name)
    }
}
