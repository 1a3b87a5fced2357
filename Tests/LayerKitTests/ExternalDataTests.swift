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
        let target = URL(fileURLWithPath: try TemporaryDirectory().file("external"))
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
            let outside = URL(fileURLWithPath: try TemporaryDirectory().file("outside.bin"))
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
        let folder = URL(fileURLWithPath: try TemporaryDirectory().file("location"))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent("m.onnx")
        try data.write(to: url)
        #expect(throws: LayerKitError.self) { _ = try ONNXModel(contentsOf: url) }
        do { _ = try ONNXModel(contentsOf: url) } catch {
            #expect("\(error)".contains("must be a relative path inside the model's folder"), "\(error)")
        }
    }

    @Test func aLengthThatDisagreesWithTheDimsIsRefused() throws {
        let folder = URL(fileURLWithPath: try TemporaryDirectory().file("length"))
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

    /// A model in a fresh folder beside `w.bin` (Float32 0, 1, 2... `floats`
    /// of them), whose initializers each read `count` floats at the byte
    /// offsets given.
    static func sharing(floats: Int, count: Int, offsets: [Int]) throws -> URL {
        let folder = URL(fileURLWithPath: try TemporaryDirectory().file("shared"))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(PB.littleEndian((0..<floats).map { Float($0).bitPattern })).write(to: folder.appendingPathComponent("w.bin"))
        let initializers = offsets.enumerated().map { i, offset in
            let external = PB.bytes(13, PB.string(1, "location") + PB.string(2, "w.bin"))
                + PB.bytes(13, PB.string(1, "offset") + PB.string(2, "\(offset)"))
                + PB.bytes(13, PB.string(1, "length") + PB.string(2, "\(count * 4)")) + PB.int(14, 1)
            return ONNXBytes.tensor("u\(i)", dims: [Int64(count)], type: 1, external)
        }
        let url = folder.appendingPathComponent("m.onnx")
        try ONNXBytes.model(graph: ONNXBytes.graph(initializers: initializers)).write(to: url)
        return url
    }

    /// Issue 27: a 29 KB model whose 400 initializers all named one 4 MiB
    /// range of its data file read it 400 times (a 1.67 GB peak). Every
    /// tensor naming a range now shares the one read of it.
    @Test func tensorsNamingOneRangeShareOneRead() throws {
        let url = try ExternalDataTests.sharing(floats: 1024, count: 1024, offsets: Array(repeating: 0, count: 50))
        let model = try ONNXModel(contentsOf: url)
        let tensors = (0..<50).map { model.graph.initializers["u\($0)"]! }
        #expect(try tensors[0].floats() == (0..<1024).map(Float.init))
        let storage = Set(tensors.map { $0.rawData!.withUnsafeBufferPointer { Int(bitPattern: $0.baseAddress) } })
        #expect(storage.count == 1, "\(storage.count) copies of one range")
    }

    /// Ranges that overlap without being equal cannot be shared; what they
    /// hold together is bounded by the size of the file they are in.
    @Test func overlappingRangesBeyondTheFileSizeAreRefused() throws {
        // 4096 bytes of data: two 2048-byte ranges 4 bytes apart (each named twice) fit; a third does not.
        let url = try ExternalDataTests.sharing(floats: 1024, count: 512, offsets: [0, 4, 0, 4])
        #expect(try ONNXModel(contentsOf: url).graph.initializers["u3"]?.floats().first == 1)
        let refused = try ExternalDataTests.sharing(floats: 1024, count: 512, offsets: [0, 4, 8])
        do {
            _ = try ONNXModel(contentsOf: refused)
            Issue.record("loaded")
        } catch {
            #expect("\(error)".contains("tensor 'u2': the model's external data ranges overlap: they hold 6144 bytes, "
                                        + "more than the 4096 bytes of the data files they are in"), "\(error)")
        }
    }
}
