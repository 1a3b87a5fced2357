import Foundation
import Testing
@testable import LayerKitCore

/// `RegularFile.bytes`: a file's bytes read straight into an array, as
/// they were written (empty, smaller than one read and larger), and the
/// refusal of what is not a regular file.
struct RegularFileTests {
    @Test func readsEveryByteAsWritten() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("layerkit-regular-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var state: UInt64 = 0x9e37_79b9_7f4a_7c15
        for size in [0, 1, 4096, 200_003] {
            let bytes = (0..<size).map { _ -> UInt8 in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return UInt8(truncatingIfNeeded: state >> 56)
            }
            let url = folder.appendingPathComponent("\(size).bin")
            try Data(bytes).write(to: url)
            #expect(try RegularFile.bytes(url.path) == bytes, "\(size) bytes")
        }
        #expect(throws: LayerKitError.self) { try RegularFile.bytes(folder.path) }
        #expect(throws: LayerKitError.self) { try RegularFile.bytes(folder.appendingPathComponent("missing").path) }
    }
}
