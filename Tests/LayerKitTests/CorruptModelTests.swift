import Foundation
import Testing
@testable import LayerKit

/// The reference cases' models (every op family), cut short and with bytes
/// overwritten: each load either succeeds or throws a LayerKitError, never
/// traps, hangs or allocates past the caps (the fuzzer's onnx targets go
/// further; this runs in every `swift test`).
@Suite struct CorruptModelTests {
    /// Every fourth case, so each family is represented (cases are listed family by family).
    static let models: [URL] = ONNXCaseTests.cases.enumerated().filter { $0.offset % 4 == 0 }
        .map { ONNXCaseTests.root.appendingPathComponent($0.element).appendingPathComponent("model.onnx") }

    @Test func theCasesAreSampled() { #expect(CorruptModelTests.models.count >= 50) }

    @Test(arguments: models)
    func cutAndCorruptedModelsAreErrors(_ url: URL) throws {
        let bytes = try [UInt8](Data(contentsOf: url))
        var generator = SeededGenerator(seed: UInt64(bytes.count))
        var variants: [[UInt8]] = (1...8).map { Array(bytes.prefix(bytes.count * $0 / 9)) }
        for _ in 0..<12 {
            var spoiled = bytes
            for _ in 0..<3 { spoiled[Int.random(in: 0..<spoiled.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            variants.append(spoiled)
        }
        for variant in variants {
            do {
                _ = try Model(data: Data(variant), name: url.deletingLastPathComponent().lastPathComponent,
                              computeUnits: .cpuOnly, notice: { _ in })
            } catch is LayerKitError {
                // A clear error is the expected outcome for most variants.
            }
        }
    }
}
