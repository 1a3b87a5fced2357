import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// LSTM, GRU and RNN beyond their reference fixtures (RecurrentModelTests
/// and the onnx node tests hold their values): hostile attributes and
/// weights are errors naming the node, and threads agree.
struct RecurrentOpTests {
    static func attribute(_ name: String, _ value: Int64) -> [UInt8] { MLModelTests.int(name, value) }

    static func string(_ name: String, _ value: String) -> [UInt8] {
        PB.string(1, name) + PB.bytes(4, Array(value.utf8)) + PB.int(20, 3)
    }

    /// The load (or first run) error of an `op` node reading x `[2, 1, 3]`
    /// and constants W and R of `gates * hidden` rows and `directions`.
    static func failure(_ op: String = "RNN", attributes: [[UInt8]] = [], hidden: Int64 = 2, directions: Int64 = 1,
                        wRows: Int64? = nil, inputs: [String] = ["x", "w", "r"], extra: [[UInt8]] = [],
                        shape: [Int] = [2, 1, 3]) -> String {
        let gates: Int64 = ["LSTM": 4, "GRU": 3][op] ?? 1
        let rows = gates * hidden
        let w = NormalizationOpsTests.floats("w", [directions, wRows ?? rows, 3],
                                             Array(repeating: 0.1, count: Int(directions * (wRows ?? rows) * 3)))
        let r = NormalizationOpsTests.floats("r", [directions, rows, hidden],
                                             Array(repeating: 0.1, count: Int(directions * rows * hidden)))
        return NormalizationOpsTests.loadError(NormalizationOpsTests.node(op, inputs: inputs, attributes: attributes),
                                               opset: 22, initializers: [w, r] + extra, shape: shape)
    }

    @Test func hostileAttributesAndWeightsAreErrorsNamingTheNode() {
        let sequenceLengths = ONNXBytes.tensor("lens", dims: [1], type: 6, PB.bytes(5, PB.varint(5)))
        let cases: [(String, String)] = [
            (Self.failure(attributes: [Self.attribute("hidden_size", 0)]), "node 'n1' (RNN): hidden_size 0 must be >= 1"),
            (Self.failure(attributes: [Self.attribute("hidden_size", 1 << 40)]),
             "node 'n1' (RNN): RNN: hidden_size 1099511627776 is not R's hidden size 2 (R is 1x2x2)"),
            (Self.failure(attributes: [Self.attribute("hidden_size", -3)]), "node 'n1' (RNN): hidden_size -3 must be >= 1"),
            (Self.failure(wRows: 3), "node 'n1' (RNN): RNN: W must be [1, 2, input] (1 gates of hidden size 2), got 1x3x3"),
            (Self.failure("LSTM", wRows: 4), "node 'n1' (LSTM): LSTM: W must be [1, 8, input] (4 gates of hidden size 2)"),
            (Self.failure(attributes: [Self.string("direction", "sideways")]),
             "node 'n1' (RNN): direction 'sideways' is not forward, reverse or bidirectional"),
            (Self.failure(attributes: [Self.string("direction", "bidirectional")]),
             "node 'n1' (RNN): RNN: R must be [2, gates * hidden, hidden] with hidden >= 1 for direction bidirectional"),
            (Self.failure(attributes: [Self.attribute("layout", 2)]), "node 'n1' (RNN): layout 2 is not 0 or 1"),
            (Self.failure(attributes: [MLModelTests.strings("activations", ["Swish"])]),
             "node 'n1' (RNN): RNN: activation 'Swish' is not one of Relu, Tanh, Sigmoid, Affine"),
            (Self.failure(attributes: [MLModelTests.strings("activations", ["Relu"]), MLModelTests.floats("activation_alpha", [1])]),
             "use 0 activation_alpha and 0 activation_beta values; 1 and 0 are given"),
            (Self.failure(attributes: [PB.string(1, "clip") + PB.float(2, -1) + PB.int(20, 1)]),
             "node 'n1' (RNN): RNN: clip must be a finite value > 0, got -1.0"),
            (Self.failure("LSTM", attributes: [Self.attribute("linear_before_reset", 1)]),
             "node 'n1' (LSTM): attribute 'linear_before_reset' is not supported"),
            (Self.failure(shape: [2, 1, 4]), "node 'n1' (RNN): RNN: X must be [seq, batch, 3] (layout 0), got 2x1x4"),
            (Self.failure(shape: [2, 3]), "node 'n1' (RNN): RNN: X must be [seq, batch, 3] (layout 0), got 2x3"),
            (Self.failure(inputs: ["x", "w", "r", "", "lens"], extra: [sequenceLengths]),
             "node 'n1' (RNN): RNN: sequence_lens holds 5, past the sequence's 2 steps"),
            (Self.failure(inputs: ["x", "w", "r", "x"]), "node 'n1' (RNN): RNN: B must be [1, 4], got 2x1x3"),
            // Refused at load, before any input or scratch is allocated.
            (Self.failure("LSTM", shape: [1 << 26, 1, 3]),
             "node 'n1' (LSTM): LSTM: X 67108864x1x3 projected onto its 4 gates would hold 536870912 elements, "
             + "more than LayerKit's limit of 256M for one tensor"),
        ]
        for (error, expected) in cases {
            #expect(error.contains(expected), "\(error)")
        }
    }

    /// Random weights, seeded.
    static func tensor(_ shape: [Int], seed: UInt64) throws -> Tensor {
        var generator = SeededGenerator(seed: seed)
        let count = shape.reduce(1, *)
        return try Tensor(shape: shape, values: (0..<count).map { _ in Float.random(in: -0.5...0.5, using: &generator) })
    }

    /// Sequences split over threads, and one wide sequence's hidden units
    /// split at every step, give the one-thread results up to float32
    /// rounding (a matrix product of fewer rows may block them otherwise).
    /// The sizes are past `RecurrentRun.walk`'s thresholds for two threads:
    /// units split (batch 1), directions apart, batch items split.
    @Test(arguments: [(RecurrentLayer.Cell.lstm, 1, 96, RecurrentLayer.Direction.forward),
                      (.gru, 1, 128, .forward), (.gru, 6, 32, .bidirectional), (.rnn, 5, 96, .reverse)])
    func threadsAgree(_ cell: RecurrentLayer.Cell, _ batch: Int, _ hidden: Int,
                               _ direction: RecurrentLayer.Direction) throws {
        let (steps, input, directions, rows) = (6, 5, direction.count, cell.gates * hidden)
        var options = RecurrentLayer.Options()
        options.direction = direction
        options.outputCount = cell.outputs
        options.sequenceLengths = (0..<batch).map { steps - $0 % 3 }
        let layer = try RecurrentLayer(cell: cell, w: Self.tensor([directions, rows, input], seed: 1),
                                       r: Self.tensor([directions, rows, hidden], seed: 2),
                                       b: Self.tensor([directions, 2 * rows], seed: 3), options: options)
        let x = try Self.tensor([steps, batch, input], seed: 4)
        func run(threads: Int) throws -> [[Float]] {
            let outputs = try layer.outputShapes(forInputShapes: [x.shape]).map { try Tensor(shape: $0) }
            let observer = CPUThreadObserver()
            try CPUThreads.$observer.withValue(observer) {
                try CPUThreads.with(threads) { try layer.evaluate(inputs: [x], outputs: outputs) }
            }
            #expect(observer.peakWorkers == threads, "\(cell) batch \(batch) hidden \(hidden)")
            return outputs.map(\.values)
        }
        let (one, two) = (try run(threads: 1), try run(threads: 2))
        for (a, b) in zip(one, two) {
            for (p, q) in zip(a, b) { #expect(abs(p - q) <= 1e-5 * max(1, abs(p))) }
        }
    }
}
