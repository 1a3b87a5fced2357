import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// Weights in a file beside the model (`onnx.save_model(...,
/// save_as_external_data=True)`, as torch writes large models): read from
/// the model's folder only, every length checked.
@Suite struct ExternalDataTests {
    static let folder = ONNXCaseTests.root.appendingPathComponent("core/external_data")

    /// The case folder copied to a fresh temporary folder, for `change` to spoil.
    static func copy(_ change: (URL) throws -> Void) throws -> URL {
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("lk-external-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: folder, to: target)
        try change(target)
        return target.appendingPathComponent("model.onnx")
    }

    static func loadError(_ url: URL) -> String {
        do {
            _ = try Model(contentsOf: url, computeUnits: .cpuOnly, notice: { _ in })
            return "loaded"
        } catch {
            return "\(error)"
        }
    }

    @Test func theWeightsAreReadFromBesideTheModel() throws {
        let model = try ONNXModel(contentsOf: ExternalDataTests.folder.appendingPathComponent("model.onnx"))
        #expect(model.unreadExternalTensor == nil)
        #expect(try model.graph.initializers["w"]?.floats().count == 4 * 3 * 3 * 3)
    }

    @Test func bytesAloneCannotReachTheWeights() throws {
        let data = try Data(contentsOf: ExternalDataTests.folder.appendingPathComponent("model.onnx"))
        #expect(throws: LayerKitError.self) { _ = try Model(data: data, name: "m.onnx", computeUnits: .cpuOnly) }
        do { _ = try Model(data: data, name: "m.onnx", computeUnits: .cpuOnly) } catch {
            #expect("\(error)".contains("tensor 'w' keeps its data in an external file; load the model from its file"))
        }
    }

    @Test func aMissingShortOrEscapingFileIsAClearError() throws {
        let missing = try ExternalDataTests.copy { try FileManager.default.removeItem(at: $0.appendingPathComponent("weights.bin")) }
        #expect(ExternalDataTests.loadError(missing).contains("cannot read"), "\(ExternalDataTests.loadError(missing))")
        let short = try ExternalDataTests.copy { folder in
            let file = folder.appendingPathComponent("weights.bin")
            try Data(try Data(contentsOf: file).prefix(100)).write(to: file)
        }
        #expect(ExternalDataTests.loadError(short).contains("holds 100 bytes, fewer than"), "\(ExternalDataTests.loadError(short))")
        let link = try ExternalDataTests.copy { folder in
            let file = folder.appendingPathComponent("weights.bin")
            let outside = FileManager.default.temporaryDirectory.appendingPathComponent("lk-outside-\(UUID().uuidString).bin")
            try FileManager.default.moveItem(at: file, to: outside)
            try FileManager.default.createSymbolicLink(at: file, withDestinationURL: outside)
        }
        #expect(ExternalDataTests.loadError(link).contains("is outside the model's folder"), "\(ExternalDataTests.loadError(link))")
    }

    /// A location with `..` or an absolute path is refused before any file is opened.
    @Test(arguments: ["../weights.bin", "/etc/hostname", "a//b", "sub/../../x"])
    func aLocationOutsideTheFolderIsRefused(_ location: String) throws {
        let external = PB.bytes(13, PB.string(1, "location") + PB.string(2, location)) + PB.int(14, 1)
        let data = ONNXBytes.model(graph: ONNXBytes.graph(initializers: [ONNXBytes.tensor("w", dims: [2], type: 1, external)]))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lk-location-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent("m.onnx")
        try data.write(to: url)
        #expect(throws: LayerKitError.self) { _ = try ONNXModel(contentsOf: url) }
        do { _ = try ONNXModel(contentsOf: url) } catch {
            #expect("\(error)".contains("must be a relative path inside the model's folder"), "\(error)")
        }
    }

    @Test func aLengthThatDisagreesWithTheDimsIsRefused() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lk-length-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(count: 64).write(to: folder.appendingPathComponent("w.bin"))
        let external = PB.bytes(13, PB.string(1, "location") + PB.string(2, "w.bin"))
            + PB.bytes(13, PB.string(1, "length") + PB.string(2, "12")) + PB.int(14, 1)
        let data = ONNXBytes.model(graph: ONNXBytes.graph(initializers: [ONNXBytes.tensor("w", dims: [2], type: 1, external)]))
        let url = folder.appendingPathComponent("m.onnx")
        try data.write(to: url)
        do {
            _ = try ONNXModel(contentsOf: url)
            Issue.record("loaded")
        } catch {
            #expect("\(error)".contains("external data length 12 does not match dims [2] of FLOAT (8 bytes)"), "\(error)")
        }
    }
}
