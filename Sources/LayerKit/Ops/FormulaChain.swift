import Foundation

/// Formulas applied one after another, each with its values bound: the
/// thing both backends run. One op is a chain of one; a fused chain of ops
/// runs as one GPU dispatch and one CPU pass over memory.
struct FormulaChain: Sendable {
    /// One formula with its values: scalars, or one value per channel.
    struct Stage: Sendable {
        let name: String
        let formula: Expr
        let scalars: [String: Float]
        let channelValues: [String: [Float]]
    }

    let stages: [Stage]
    /// The CPU program and GPU kernel, made on first use and kept: a layer
    /// that runs many times (a model's) compiles its formula once.
    private let compiled = Compiled()

    init(stages: [Stage]) { self.stages = stages }

    /// Lazily built forms of a chain, shared by its copies.
    private final class Compiled: @unchecked Sendable {
        let lock = NSLock()
        var program: CPUProgram?
        var pieces: [Piece]?
        /// The element-wise template's pipeline for each piece and its
        /// per-channel weights on the device, per context.
        let prepared = PerContext<[(kernel: GPUKernel<PerElementConstants>, weights: GPUBuffer)]>()
    }

    /// One GPU dispatch of a chain: some of its stages as one kernel, with
    /// their scalar parameters and per-channel weight sets.
    struct Piece: Sendable {
        let kernel: PerElementKernel
        let parameters: [Float]
        let weights: [[Float]]
    }

    /// The most stages one GPU kernel holds; a longer chain runs as several
    /// dispatches of at most this many stages, in place on the output image,
    /// so its intermediate values are stored in fp16 every this many stages
    /// (as unfused layers are after each). Measured on lavapipe: the driver
    /// JIT-compiles a kernel at its first dispatch in time superlinear in its
    /// stages (Tanh: 100 stages 0.39 s, 200 0.85 s, 400 2.4 s, 800 13.5 s), while
    /// glslang and pipeline creation take 0.2 s at 400; pieces of 64 identical
    /// stages are one kernel, compiled once.
    static let maxStagesPerKernel = 64

    /// `Linear+Swish`-style name for kernels, notices and reports.
    var name: String { stages.map(\.name).joined(separator: "+") }

    /// Throws unless every value each stage uses is there, per channel values
    /// for exactly `channels` channels.
    func checkChannels(_ channels: Int) throws {
        for stage in stages {
            for name in stage.formula.valueNames {
                if let values = stage.channelValues[name] {
                    guard values.count == channels else {
                        throw LayerKitError.invalidWeights(
                            "\(stage.name): \(values.count) '\(name)' weights for \(channels) channels")
                    }
                } else if stage.scalars[name] == nil {
                    throw LayerKitError.invalidWeights(
                        "\(stage.name) needs per-channel weights '\(name)' (one Float32 per channel)")
                }
            }
        }
    }

    /// Throws unless every input shape has the channel count (axis 1) the
    /// chain's per-channel values were given for.
    func checkShapes(_ shapes: [[Int]]) throws {
        for shape in shapes { try checkChannels(CPUEvaluator.channels(of: shape)) }
    }

    /// Runs the chain on the CPU: `output = chain(input)` for each pair, on
    /// `threadCount` threads (nil: one per active processor).
    func evaluate(inputs: [Tensor], outputs: [Tensor], threadCount: Int? = nil) throws {
        try checkShapes(inputs.map(\.shape))
        let program = try cpuProgram()
        let evaluator = CPUEvaluator(threadCount: threadCount)
        for (input, output) in zip(inputs, outputs) {
            try evaluator.run(program, input: input, output: output, op: name)
        }
    }

    /// Creates the chain's pipeline on `context` and uploads its per-channel
    /// values, once per context.
    func prepare(on context: GPUContext) throws { _ = try prepared(on: context) }

    private func prepared(on context: GPUContext) throws -> [(kernel: GPUKernel<PerElementConstants>, weights: GPUBuffer)] {
        let pieces = try gpuPieces()
        return try compiled.prepared.value(on: context) {
            // Every set has the same length, the chain's channel count (checkChannels).
            try pieces.map { piece in
                (try context.kernel(for: piece.kernel),
                 try context.makeBuffer(floats: PerElementConstants.weightLayout(piece.weights,
                                                                                  channels: piece.weights.first?.count ?? 0)))
            }
        }
    }

    /// Encodes the chain per image pair: one dispatch per piece (one for a
    /// chain of at most `maxStagesPerKernel` stages), the first from the input
    /// to the output, the others in place on the output.
    func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        for input in inputs { try checkChannels(input.featureChannels) }
        let pieces = try gpuPieces()
        let states = try prepared(on: commandBuffer.context)
        for (input, output) in zip(inputs, outputs) {
            for (index, (piece, state)) in zip(pieces, states).enumerated() {
                try commandBuffer.dispatch(state.kernel, input: index == 0 ? input : output, output: output,
                                           parameters: piece.parameters, weightBuffer: state.weights)
            }
        }
    }

    /// The chain for channels `range` of `featureChannels`: per-channel
    /// values cut to that range (after checking they are `featureChannels`
    /// long), so a piece of a large tensor gets its own channels' values.
    func channels(_ range: Range<Int>, of featureChannels: Int) throws -> FormulaChain {
        try checkChannels(featureChannels)
        guard range.lowerBound >= 0, range.upperBound <= featureChannels else {
            throw LayerKitError.shapeMismatch("\(name): channels \(range) of \(featureChannels)")
        }
        return FormulaChain(stages: stages.map { stage in
            Stage(name: stage.name, formula: stage.formula, scalars: stage.scalars,
                  channelValues: stage.channelValues.mapValues { Array($0[range]) })
        })
    }

    func cpuProgram() throws -> CPUProgram {
        compiled.lock.lock(); defer { compiled.lock.unlock() }
        if let program = compiled.program { return program }
        let program = try CPUProgram(self)
        compiled.program = program
        return program
    }

    /// The chain's GPU pieces, made once: consecutive stages, at most
    /// `maxStagesPerKernel` and `PerElementKernel.maxParameters` scalars each.
    func gpuPieces() throws -> [Piece] {
        compiled.lock.lock(); defer { compiled.lock.unlock() }
        if let pieces = compiled.pieces { return pieces }
        var pieces: [Piece] = []
        var start = 0
        var scalars = 0
        for (index, stage) in stages.enumerated() {
            let count = stage.formula.valueNames.filter { stage.channelValues[$0] == nil && stage.scalars[$0] != nil }.count
            if index > start && (index - start == FormulaChain.maxStagesPerKernel
                                 || scalars + count > PerElementKernel.maxParameters) {
                pieces.append(try FormulaChain.piece(stages[start..<index]))
                (start, scalars) = (index, 0)
            }
            scalars += count
        }
        pieces.append(try FormulaChain.piece(stages[start...]))
        compiled.pieces = pieces
        return pieces
    }

    /// The whole chain as one GLSL kernel (what a chain of at most
    /// `maxStagesPerKernel` stages runs as): one function per stage, applied
    /// in order; scalars become `param(i)` and per-channel values `weight(k)`.
    func gpuKernel() throws -> (PerElementKernel, [Float], [[Float]]) {
        let piece = try FormulaChain.piece(stages[...])
        return (piece.kernel, piece.parameters, piece.weights)
    }

    /// `stages` as one kernel. Each stage's result is `precise`, so the
    /// driver keeps IEEE results (no folding of `x - x`; see `Expr.glslLiteral`).
    private static func piece(_ stages: ArraySlice<Stage>) throws -> Piece {
        let name = stages.map(\.name).joined(separator: "+")
        var parameters: [Float] = []
        var weights: [[Float]] = []
        let (functions, body) = try glsl(stages, functionPrefix: "lk_stage", parameter: "param", weight: "weight",
                                         parameters: &parameters, weights: &weights)
        guard parameters.count <= PerElementKernel.maxParameters else {
            throw LayerKitError.invalidParameter(
                "\(name): \(parameters.count) scalar parameters, the GPU kernel takes at most \(PerElementKernel.maxParameters)")
        }
        return Piece(kernel: PerElementKernel(name: name, body: body, functions: functions),
                     parameters: parameters, weights: weights)
    }

    /// `stages` as GLSL: one function a stage, `<functionPrefix><i>(vec4 x)`,
    /// on one line, and the body applying them in order to `x`. A scalar
    /// value becomes `<parameter>(i)` (a float; its value appended to
    /// `parameters`), a per-channel one `<weight>(k)` (the texel's vec4; its
    /// values appended to `weights`), so the caller's shader defines how
    /// they are read: the element-wise template from push constants and a
    /// buffer, a fused epilogue (Shaders/epilogue.glsl) from one buffer.
    static func glsl(_ stages: ArraySlice<Stage>, functionPrefix: String, parameter: String, weight: String,
                     parameters: inout [Float], weights: inout [[Float]]) throws -> (functions: String, body: String) {
        var functions: [String] = []
        for (index, stage) in stages.enumerated() {
            var slots: [String: Expr.GLSLSlot] = [:]
            for name in stage.formula.valueNames {
                if let values = stage.channelValues[name] {
                    slots[name] = .perChannel("\(weight)(\(weights.count))")
                    weights.append(values)
                } else if let value = stage.scalars[name] {
                    slots[name] = .scalar("\(parameter)(\(parameters.count))")
                    parameters.append(value)
                }
            }
            functions.append("vec4 \(functionPrefix)\(index)(vec4 x) { precise vec4 y = \(try stage.formula.glsl(slots: slots)); return y; }")
        }
        let body = functions.indices.reduce("x") { "\(functionPrefix)\($1)(\($0))" }
        return (functions.joined(separator: " "), body)
    }
}
