import Foundation
import Testing
@testable import LayerKit

@Suite struct TrainingDataTests {
    /// [3, 2, 2] inputs numbered 0..<12 and targets 7, 8, 9.
    private func provider() throws -> ArrayBatchProvider {
        try ArrayBatchProvider(inputs: Tensor(shape: [3, 2, 2], values: (0..<12).map(Float.init)),
                               targets: Tensor(shape: [3], values: [7, 8, 9]))
    }

    @Test func examplesAreItemsAlongAxisZero() throws {
        let data = try provider()
        #expect(data.count == 3)
        let (input, target) = try data.features(at: 1)
        #expect(input.shape == [2, 2] && input.values == [4, 5, 6, 7])
        #expect(target.shape == [1] && target.values == [8])
        #expect(throws: LayerKitError.self) { try data.features(at: 3) }
    }

    @Test func batchesStackExamplesInTheOrderGiven() throws {
        let batch = try provider().batch([2, 0])
        #expect(batch.input.shape == [2, 2, 2] && batch.input.values == [8, 9, 10, 11, 0, 1, 2, 3])
        #expect(batch.target.shape == [2] && batch.target.values == [9, 7])
    }

    @Test func mismatchedCountsAreRefused() throws {
        #expect(throws: LayerKitError.self) {
            try ArrayBatchProvider(inputs: Tensor(shape: [3, 2]), targets: Tensor(shape: [4]))
        }
        #expect(throws: LayerKitError.self) {
            try ArrayBatchProvider(inputs: Tensor(shape: [0, 2]), targets: Tensor(shape: [0]))
        }
    }

    @Test func shuffledOrdersArePermutationsFixedBySeedAndEpoch() {
        let a = shuffledOrder(count: 100, seed: 7, epoch: 3)
        #expect(a.sorted() == Array(0..<100))
        #expect(a == shuffledOrder(count: 100, seed: 7, epoch: 3))
        #expect(a != shuffledOrder(count: 100, seed: 7, epoch: 4))
        #expect(a != shuffledOrder(count: 100, seed: 8, epoch: 3))
    }
}
