extension CPUEvaluator {
    /// Runs a compiled formula over `input` into `output` (same shape; may be
    /// the same tensor), read as NCHW so per-channel values find their planes.
    func run(_ program: CPUProgram, input: Tensor, output: Tensor, op: String) throws {
        try checkSameShape(input, output, op: op)
        let shape = try input.nchw()
        program.run(input: input.dataPointer, output: output.dataPointer, count: input.count,
                    plane: shape.h * shape.w, channels: shape.c, threadCount: threadCount, isa: isa)
    }
}
