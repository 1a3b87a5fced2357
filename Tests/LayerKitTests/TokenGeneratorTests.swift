import Foundation
import Testing
@testable import LayerKit

/// `TokenGenerator`'s decode window on the tiny GPT-2 of the fixtures
/// (`Scripts/generate_gpt2_fixture.py`): the ids are onnxruntime's KV-cache
/// loop's (`reference.json`), and every decode step runs one plan.
struct TokenGeneratorTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/gpt2-kv")

    struct Reference: Decodable {
        let prompt: [Int64]
        let ids: [Int64]
    }

    static func reference() throws -> Reference {
        try JSONDecoder().decode(Reference.self, from: Data(contentsOf: fixture.appendingPathComponent("reference.json")))
    }

    /// A run within one window step (64 positions): every decode step sees
    /// a past of the same length, so the first decode step's plan serves
    /// every later one, and the ids are onnxruntime's, whose cache grows.
    @Test func decodeStepsShareOnePlan() throws {
        let model = try Model(contentsOf: Self.fixture.appendingPathComponent("model.onnx"), computeUnits: .cpuOnly)
        let generator = try TokenGenerator(model: model)
        let reference = try Self.reference()
        var decodePlans: [ModelPlan] = []
        let ids = try generator.generate(after: reference.prompt, count: reference.ids.count) { _, isPrefill in
            if !isPrefill { decodePlans.append(try #require(model.planForTests)) }
        }
        #expect(ids == reference.ids)
        #expect(decodePlans.count == reference.ids.count - 1)
        #expect(decodePlans.allSatisfy { $0 === decodePlans[0] }, "a decode step made a new plan")
        #expect(generator.cachedTokens == reference.prompt.count + reference.ids.count - 1)
    }

    /// A run across a window step (5 + 100 - 2 = 103 positions): the pasts
    /// are 64 positions, then 103, so two decode plans, and the ids are
    /// those of the same steps run with a cache that grows by one
    /// (`next(after:)` alone).
    @Test func theWindowGrowsByItsStep() throws {
        let model = try Model(contentsOf: Self.fixture.appendingPathComponent("model.onnx"), computeUnits: .cpuOnly)
        let prompt = try Self.reference().prompt
        let generator = try TokenGenerator(model: model)
        var decodePlans: [ModelPlan] = []
        let ids = try generator.generate(after: prompt, count: 100) { _, isPrefill in
            if !isPrefill { decodePlans.append(try #require(model.planForTests)) }
        }
        let distinct = decodePlans.indices.filter { $0 == 0 || decodePlans[$0] !== decodePlans[$0 - 1] }
        // Decode step d runs on prompt.count + d cached tokens: 65 of them need the second window.
        #expect(distinct == [0, 65 - prompt.count], "decode steps that planned: \(distinct)")
        try generator.reset()
        var grown: [Int64] = []
        var input = prompt
        for _ in 0..<100 {
            grown.append(try generator.next(after: input))
            input = [grown.last!]
        }
        #expect(ids == grown)
    }

    /// The window's past: the last positions of the present, after zeros.
    @Test func rightAlignedKeepsTheLastPositions() throws {
        // [2, 3, 2] float32: value = 100 * outer + 10 * position + inner.
        let values: [Double] = (0..<12).map { (i: Int) -> Double in
            let (outer, position, inner) = (i / 6, i / 2 % 3, i % 2)
            return Double(100 * outer + 10 * position + inner)
        }
        let value = try TypedTensor(.float32, shape: [2, 3, 2], doubles: values)
        let padded = try TokenGenerator.rightAligned(value, axis: 1, slots: 5)
        #expect(padded.shape == [2, 5, 2])
        let expected: [Double] = [0, 0, 0, 0, 0, 1, 10, 11, 20, 21, 0, 0, 0, 0, 100, 101, 110, 111, 120, 121]
        #expect(padded.doubles() == expected)
        let trimmed = try TokenGenerator.rightAligned(value, axis: 1, slots: 2)
        let last: [Double] = [10, 11, 20, 21, 110, 111, 120, 121]
        #expect(trimmed.doubles() == last)
        #expect(try TokenGenerator.rightAligned(value, axis: 1, slots: 3).doubles() == values)
        // A zero-size cache (no heads) pads and trims to zero-size tensors of the new shape.
        let empty = try TypedTensor(zerosOf: .float32, shape: [1, 0, 3, 2])
        #expect(try TokenGenerator.rightAligned(empty, axis: 2, slots: 5).shape == [1, 0, 5, 2])
        #expect(try TokenGenerator.rightAligned(empty, axis: 2, slots: 1).shape == [1, 0, 1, 2])
    }
}
