extension CPUEvaluator {
    /// Runs a compiled formula over `input` into `output` (same shape; may be
    /// the same tensor). Per-channel values find their planes by ONNX's rule,
    /// the one `Tensor.nchwShape` follows, at any rank: axis 1 is the channel
    /// axis (1 channel at rank 1) and the axes after it are one plane.
    func run(_ program: CPUProgram, input: Tensor, output: Tensor, op: String) throws {
        try checkSameShape(input, output, op: op)
        program.run(input: input.dataPointer, output: output.dataPointer, count: input.count,
                    plane: input.shape.dropFirst(2).reduce(1, *), channels: Self.channels(of: input.shape),
                    threadCount: threadCount, isa: isa)
    }

    /// The channel count of `shape` by ONNX's rule: axis 1, or 1 at rank 1.
    static func channels(of shape: [Int]) -> Int { shape.count > 1 ? shape[1] : 1 }
}
