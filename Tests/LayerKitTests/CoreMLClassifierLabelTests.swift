import Foundation
import Testing
@testable import LayerKit

/// A NeuralNetworkClassifier's predicted feature (`classLabel`): the label
/// of each row's largest probability, a string or an int64 as the model
/// declares it, against numpy's argmax of the probabilities computed from
/// the classifier's weights (`Fixtures/coreml-labels`,
/// `Scripts/generate_coreml_label_fixtures.py`).
@Suite struct CoreMLClassifierLabelTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/coreml-labels")

    @Test(arguments: [("StringLabels", ElementType.string), ("IntLabels", .int64)])
    func theClassLabelIsTheLabelOfTheLargestProbability(_ name: String, type: ElementType) throws {
        let model = try Model(contentsOf: Self.directory.appendingPathComponent("\(name).mlmodel"), computeUnits: .cpuOnly,
                              notice: { _ in })
        #expect(model.outputs.map(\.name) == ["probs", "classLabel"])
        #expect(model.outputs.last?.dataType == type)
        let x = try TypedTensor(npyFile: Self.directory.appendingPathComponent("x.npy").path)
        let outputs = try model.predict(typed: ["x": x])
        let label = try #require(outputs["classLabel"])
        let expected = try TypedTensor(npyFile: Self.directory.appendingPathComponent("\(name)-classLabel.npy").path)
        #expect(label.elementType == type && label.shape == [8])
        #expect(label == expected, "\(label.strings) \(label.integers()) vs \(expected.strings) \(expected.integers())")
        let probabilities = try #require(outputs["probs"])
        let reference = try TypedTensor(npyFile: Self.directory.appendingPathComponent("\(name)-probs.npy").path)
        #expect(ClassicMLModelTests.relativeError(probabilities, reference) <= 1e-5)
    }
}
