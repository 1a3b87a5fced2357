extension CPUEvaluator {
    /// Runs a compiled formula over `input` into `output` (same shape; may be
    /// the same tensor), read as NCHW so per-channel values find their planes.
    func run(_ program: CPUProgram, input: Tensor, output: Tensor, op: String) throws {
        let shape = try input.nchw()
        try run(program, input: input, output: output, channels: shape.c, plane: shape.h * shape.w, op: op)
    }

    /// Runs a compiled formula over `input` into `output` (same shape; may be
    /// the same tensor), read as planes of `plane` elements, channel after
    /// channel (`channels` of them), image after image.
    func run(_ program: CPUProgram, input: Tensor, output: Tensor, channels: Int, plane: Int, op: String) throws {
        try checkSameShape(input, output, op: op)
        program.run(input: input.dataPointer, output: output.dataPointer, count: input.count,
                    plane: plane, channels: channels, threadCount: threadCount, isa: isa)
    }
}
