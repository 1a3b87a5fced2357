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

    /// The window's past: the last positions of the present, after zeros,
    /// written over whatever the target held.
    @Test func rightAlignKeepsTheLastPositions() throws {
        // [2, 3, 2]: value = 100 * outer + 10 * position + inner.
        let values: [Float] = (0..<12).map { (i: Int) -> Float in
            let (outer, position, inner) = (i / 6, i / 2 % 3, i % 2)
            return Float(100 * outer + 10 * position + inner)
        }
        let value = try Tensor(shape: [2, 3, 2], values: values)
        func aligned(slots: Int) throws -> [Float] {
            let target = try Tensor(shape: [2, slots, 2], values: Array(repeating: -7, count: 4 * slots))
            TokenGenerator.rightAlign(value, axis: 1, into: target)
            return Array(target.elements)
        }
        #expect(try aligned(slots: 5) == [0, 0, 0, 0, 0, 1, 10, 11, 20, 21, 0, 0, 0, 0, 100, 101, 110, 111, 120, 121])
        #expect(try aligned(slots: 2) == [10, 11, 20, 21, 110, 111, 120, 121])
        #expect(try aligned(slots: 3) == values)
        // A zero-size cache (no heads) has nothing to move.
        let empty = try Tensor(shape: [1, 0, 3, 2])
        let target = try Tensor(shape: [1, 0, 5, 2])
        TokenGenerator.rightAlign(empty, axis: 2, into: target)
        #expect(target.shape == [1, 0, 5, 2])
    }

    /// The cache's tensors are the generator's: within a window step, each
    /// decode step writes its presents into the last step's and its past
    /// into the tensors it just read, so every step uses the same two sets.
    @Test func decodeStepsReuseTheCacheTensors() throws {
        let model = try Model(contentsOf: Self.fixture.appendingPathComponent("model.onnx"), computeUnits: .cpuOnly)
        let generator = try TokenGenerator(model: model)
        let reference = try Self.reference()
        var storage: [Set<UnsafeMutablePointer<Float>>] = []
        _ = try generator.generate(after: reference.prompt, count: reference.ids.count) { _, isPrefill in
            if !isPrefill { storage.append(generator.cacheStorageForTests) }
        }
        // The last step's past runs one past the window (the run's span): it keeps its present as the past.
        let window = storage.dropLast()
        #expect(window.count == reference.ids.count - 2)
        #expect(Set(window).count == 1, "decode steps used \(Set(window).count) sets of cache tensors")
        #expect(window.first?.count == 2 * generator.layout.pairs.count)
        #expect(storage.last?.count == generator.layout.pairs.count)
    }

    /// The generator's run (`Model.predict(inputs:typed:into:)`) checks a
    /// typed input as `predict(typed:)` does, and refuses an input given both ways.
    @Test func mixedInputsAreChecked() throws {
        let model = try Model(contentsOf: Self.fixture.appendingPathComponent("model.onnx"), computeUnits: .cpuOnly)
        let layout = try KVCacheLayout(model)
        let past = try Dictionary(uniqueKeysWithValues: layout.pairs.map { ($0.past, try Tensor(shape: $0.emptyShape)) })
        let ids = try TypedTensor(.int64, shape: [1, 1], integers: [3])
        let twice = past.first!.key
        let mistakes: [([String: TypedTensor], String)] = [
            ([layout.inputIDs.name: ids, twice: try TypedTensor(zerosOf: .float32, shape: [1, 4, 0, 16])],
             "input '\(twice)' was given twice, as a Tensor and as a TypedTensor"),
            ([layout.inputIDs.name: try TypedTensor(.float32, shape: [1, 1], doubles: [3])],
             "input '\(layout.inputIDs.name)' is float32; the model takes int64"),
        ]
        for (typed, expected) in mistakes {
            #expect {
                try model.predict(inputs: past, typed: typed, into: [:])
            } throws: { error in
                "\(error)".contains(expected)
            }
        }
    }
}
