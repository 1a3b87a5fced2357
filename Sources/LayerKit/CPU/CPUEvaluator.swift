import CKernels
import Foundation

/// Runs element-wise layers on the CPU: vector kernels (AVX-512F or AVX2+FMA
/// where the CPU has them, portable C elsewhere, chosen at run time) over chunks of a
/// tensor on several threads. The CPU side of element-wise layers
/// such as Swish.
///
/// Each operation reads `input` and writes `output`, which must have the same
/// shape; `output` may be `input` itself (in place).
public struct CPUEvaluator: Sendable {
    /// The number of threads to use; values below 1 count as 1.
    public var threadCount: Int

    /// The instruction set the kernels run on; internal so that tests can
    /// force the portable path (see ``forcing(_:)``).
    private(set) var isa: lk_isa

    /// Makes an evaluator that uses `threadCount` threads, by default the
    /// current run's (a backend's `threads`), else one per active processor.
    public init(threadCount: Int? = nil) {
        self.threadCount = threadCount ?? CPUThreads.current
        self.isa = lk_kernels_isa()
    }

    /// The instruction set the kernels use on this CPU: "avx512f", "avx2+fma"
    /// or "scalar".
    public static var instructionSet: String { String(cString: lk_isa_name(lk_kernels_isa())) }

    /// This evaluator running its kernels on `isa`, or nil if the CPU lacks it.
    func forcing(_ isa: lk_isa) -> CPUEvaluator? {
        guard isa.rawValue <= lk_kernels_isa().rawValue else { return nil }
        var copy = self
        copy.isa = isa
        return copy
    }

    /// Throws unless `output` has `input`'s shape.
    func checkSameShape(_ input: Tensor, _ output: Tensor, op: String) throws {
        guard input.shape == output.shape else {
            throw LayerKitError.shapeMismatch(
                "\(op): output shape \(Tensor.describe(output.shape)) does not match input shape \(Tensor.describe(input.shape))")
        }
    }
}
