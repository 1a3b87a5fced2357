import Foundation
import Testing
@testable import LayerKit

/// ai.onnx.ml models that read or write strings (`Fixtures/ml-strings`,
/// `Scripts/generate_ml_string_fixtures.py`) through `Model.predict(typed:)`
/// on the CPU, against scikit-learn's results where it has them, else
/// onnxruntime's: strings and labels equal, scores within 1e-5 of
/// max(1, |reference|). And the errors hostile attributes and values meet.
@Suite struct MLStringModelTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/ml-strings")

    static let cases: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()

    typealias M = MLModelTests

    @Test func everyCaseIsThere() { #expect(Self.cases.count >= 6, "\(Self.cases)") }

    @Test(arguments: cases) func matchesScikitLearnAndOnnxruntime(_ name: String) throws {
        try Self.check(Self.directory.appendingPathComponent(name))
    }

    /// The case in `folder` (model.onnx read on x.npy) against its
    /// references (`ClassicMLModelTests.reference`): strings and int64
    /// exactly, floats to a relative error of 1e-5.
    static func check(_ folder: URL) throws {
        let name = folder.lastPathComponent
        let model = try Model(contentsOf: folder.appendingPathComponent("model.onnx"), computeUnits: .cpuOnly)
        let x = try TypedTensor(npyFile: folder.appendingPathComponent("x.npy").path)
        let outputs = try model.predict(typed: [model.inputs[0].name: x])
        for description in model.outputs {
            let reference = try ClassicMLModelTests.reference(folder, description.name)
            let output = try #require(outputs[description.name])
            #expect(output.shape == reference.shape, "\(name) \(description.name): \(output.shape) vs \(reference.shape)")
            switch reference.elementType {
            case .string: #expect(output.strings == reference.strings, "\(name) \(description.name)")
            case .int64: #expect(output.elementType == .int64 && output.integers() == reference.integers(), "\(name)")
            case .bool: #expect(output.elementType == .bool && output.integers() == reference.integers(), "\(name)")
            default:
                let error = ClassicMLModelTests.relativeError(output, reference)
                #expect(error <= 1e-5, "\(name) \(description.name): relative error \(error)")
            }
        }
    }

    /// The error of a one-node model of `opType` on a [1, 3] string input,
    /// loaded and run ("ran" when it runs).
    static func failure(_ opType: String, _ attributes: [[UInt8]]) -> String {
        do {
            let model = try Model(data: M.model(opType, elementType: 8, attributes: attributes), computeUnits: .cpuOnly)
            _ = try model.predict(typed: ["X": TypedTensor(shape: [1, 3], strings: ["a", "b", "c"])])
            return "ran"
        } catch {
            return "\(error)"
        }
    }

    @Test func badMapsNameTheNode() {
        let counts = Self.failure("LabelEncoder", [M.strings("keys_strings", ["a", "b"]), M.ints("values_int64s", [1])])
        #expect(counts.contains("node 'skl' (LabelEncoder)") && counts.contains("2 keys but 1 values"), "\(counts)")
        let twice = Self.failure("LabelEncoder", [M.strings("keys_strings", ["a"]), M.ints("keys_int64s", [1]),
                                                  M.ints("values_int64s", [1])])
        #expect(twice.contains("gives its keys 2 times (keys_strings, keys_int64s)"), "\(twice)")
        let types = Self.failure("LabelEncoder", [M.ints("keys_int64s", [1]), M.strings("values_strings", ["a"])])
        #expect(types.contains("its input is string but its keys are int64"), "\(types)")
        let mapper = Self.failure("CategoryMapper", [M.strings("cats_strings", ["a"])])
        #expect(mapper.contains("node 'skl' (CategoryMapper)") && mapper.contains("needs both cats_strings and cats_int64s"),
                "\(mapper)")
        let encoder = Self.failure("OneHotEncoder", [M.ints("cats_int64s", [1, 2])])
        #expect(encoder.contains("its input is string but its categories are int64"), "\(encoder)")
    }

    @Test func stringFormsOnFloatValuesAreRefusedByName() {
        let mapper = M.failure(M.model("CategoryMapper", attributes: [M.strings("cats_strings", ["a"]), M.ints("cats_int64s", [1])]))
        #expect(mapper.contains("node 'skl' (CategoryMapper)") && mapper.contains("its input is a float value"), "\(mapper)")
        let encoder = M.failure(M.model("LabelEncoder", attributes: [M.strings("keys_strings", ["a"]), M.ints("values_int64s", [1])]))
        #expect(encoder.contains("node 'skl' (LabelEncoder): its input is float32 but its keys are string"), "\(encoder)")
        let toFloats = M.failure(M.model("LabelEncoder", attributes: [M.strings("keys_strings", ["a"]), M.floats("values_floats", [1])]))
        #expect(toFloats.contains("string keys or values (keys_strings) need a string input"), "\(toFloats)")
    }

    /// zeros=0 makes an unknown category an error: at run time, on the
    /// values, naming the node; the plan (made on empty strings) loads.
    @Test func anUnknownCategoryWithZerosZeroIsTheRunsError() throws {
        let model = try Model(data: M.model("OneHotEncoder", elementType: 8, attributes: [
            M.strings("cats_strings", ["a", "b"]), M.int("zeros", 0),
        ]), computeUnits: .cpuOnly)
        let known = try model.predict(typed: ["X": TypedTensor(shape: [1, 3], strings: ["b", "a", "b"])])
        #expect(try #require(known["Y"]).doubles() == [0, 1, 1, 0, 0, 1])
        let error = #expect(throws: (any Error).self) {
            try model.predict(typed: ["X": TypedTensor(shape: [1, 3], strings: ["b", "zebra", "a"])])
        }
        #expect("\(String(describing: error))".contains("node 'skl' (OneHotEncoder): element 1 is none of its categories"),
                "\(String(describing: error))")
    }
}
