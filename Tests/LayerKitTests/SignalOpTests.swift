import Foundation
import Testing
@testable import LayerKitONNX
@testable import LayerKit

/// DFT, STFT, the windows and MelWeightMatrix beyond the onnx node tests
/// and the onnxruntime cases (Fixtures/onnx-cases/spectral): transforms
/// worked out by hand, and hostile lengths, axes and sizes as errors naming
/// the node, never a huge allocation.
@Suite struct SignalOpTests {
    typealias T = TypedIndexingKernelTests

    @Test func inverseOnesidedGivesTheRealSignal() throws {
        // irfft of the 3 bins [4, 0, 0] (n = 2 * (3 - 1) = 4 by default) is four ones: the DC term spread evenly.
        let bins = try T.float([1, 3, 2], [4, 7, 0, 0, 0, 0])
        let signal = try T.run("DFT", [bins], opset: 20, ["inverse": .int(1), "onesided": .int(1)])[0]
        #expect(signal.shape == [1, 4, 1] && signal.doubles() == [1, 1, 1, 1], "\(signal.doubles())")
        // Forward: a unit impulse has a flat spectrum, of any length (5: not a power of two).
        let impulse = try T.float([5, 1], [1, 0, 0, 0, 0])
        let flat = try T.run("DFT", [impulse, nil, try T.int64([], [0])], opset: 20)[0]
        #expect(flat.shape == [5, 2])
        #expect(zip(flat.doubles(), [1.0, 0, 1, 0, 1, 0, 1, 0, 1, 0]).allSatisfy { abs($0 - $1) < 1e-7 }, "\(flat.doubles())")
    }

    @Test func hostileLengthsAxesAndSizesAreErrors() throws {
        let x = try T.float([1, 4, 1], [1, 2, 3, 4])
        let signal = try T.float([1, 8, 1], Array(repeating: 1, count: 8))
        let cases: [(String?, String)] = [
            (T.failure("DFT", [x, try T.int64([], [1 << 40])], opset: 20),
             "node 'n' (DFT): a transform of 1099511627776 points is outside 1...4194304, LayerKit's limit"),
            (T.failure("DFT", [x, try T.int64([], [0])], opset: 20), "a transform of 0 points is outside"),
            (T.failure("DFT", [x, nil, try T.int64([], [-1])], opset: 20), "axis -1 must name a signal axis"),
            (T.failure("DFT", [x], opset: 17, ["axis": .int(2)]), "axis 2 must name a signal axis of the rank-3 input"),
            (T.failure("DFT", [try T.float([4], [1, 2, 3, 4])], opset: 20), "input must be a float tensor [..., 1]"),
            (T.failure("STFT", [signal, try T.int64([], [0]), nil, try T.int64([], [4])], opset: 17),
             "frame_step 0 must be >= 1"),
            (T.failure("STFT", [signal, try T.int64([], [1]), nil, try T.int64([], [9])], opset: 17),
             "the signal's 8 samples at least one frame of 9"),
            (T.failure("STFT", [signal, try T.int64([], [1]), try T.float([3], [1, 1, 1]), try T.int64([], [4])], opset: 17),
             "the window's 3 values must match frame_length 4"),
            (T.failure("STFT", [signal, try T.int64([], [1])], opset: 17), "needs a window or a frame_length"),
            (T.failure("HannWindow", [try T.int64([], [-1])], opset: 17), "size -1 must be 0 to"),
            (T.failure("BlackmanWindow", [try T.int64([], [1 << 40])], opset: 17), "size 1099511627776 must be 0 to"),
            (T.failure("HammingWindow", [try T.int64([], [4])], opset: 17, ["output_datatype": .int(8)]),
             "output_datatype 8 is not a float or integer type"),
            (T.failure("MelWeightMatrix", [try T.int64([], [4]), try T.int64([], [16]), try T.int64([], [8000]),
                                           try T.float([], [0]), try T.float([], [40000])], opset: 17),
             "upper_edge_hertz 40000.0 reaches past the spectrogram's 9 bins at sample_rate 8000"),
            (T.failure("MelWeightMatrix", [try T.int64([], [0]), try T.int64([], [16]), try T.int64([], [8000]),
                                           try T.float([], [0]), try T.float([], [100])], opset: 17),
             "num_mel_bins, dft_length, sample_rate [0, 16, 8000] must be >= 1"),
        ]
        for (error, expected) in cases {
            #expect(error?.contains(expected) == true, "\(error ?? "no error")")
        }
    }
}
