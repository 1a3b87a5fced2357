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
        var kernel: (PerElementKernel, [Float], [[Float]])?
        /// The element-wise template's pipeline for `kernel` and its
        /// per-channel weights on the device, per context.
        let prepared = PerContext<(kernel: GPUKernel<PerElementConstants>, weights: GPUBuffer)>()
    }

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

    /// Runs the chain on the CPU: `output = chain(input)` for each pair, on
    /// `threadCount` threads (nil: one per active processor).
    func evaluate(inputs: [Tensor], outputs: [Tensor], threadCount: Int? = nil) throws {
        for input in inputs { try checkChannels(CPUEvaluator.channels(of: input.shape)) }
        let program = try cpuProgram()
        let evaluator = CPUEvaluator(threadCount: threadCount)
        for (input, output) in zip(inputs, outputs) {
            try evaluator.run(program, input: input, output: output, op: name)
        }
    }

    /// Creates the chain's pipeline on `context` and uploads its per-channel
    /// values, once per context.
    func prepare(on context: GPUContext) throws { _ = try prepared(on: context) }

    private func prepared(on context: GPUContext) throws -> (kernel: GPUKernel<PerElementConstants>, weights: GPUBuffer) {
        let (kernel, _, weights) = try cachedGPUKernel()
        return try compiled.prepared.value(on: context) {
            // Every set has the same length, the chain's channel count (checkChannels).
            (try context.kernel(for: kernel),
             try context.makeBuffer(floats: PerElementConstants.weightLayout(weights, channels: weights.first?.count ?? 0)))
        }
    }

    /// Encodes the chain as one dispatch per image pair.
    func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        for input in inputs { try checkChannels(input.featureChannels) }
        let (_, parameters, _) = try cachedGPUKernel()
        let state = try prepared(on: commandBuffer.context)
        for (input, output) in zip(inputs, outputs) {
            try commandBuffer.dispatch(state.kernel, input: input, output: output, parameters: parameters,
                                       weightBuffer: state.weights)
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

    private func cpuProgram() throws -> CPUProgram {
        compiled.lock.lock(); defer { compiled.lock.unlock() }
        if let program = compiled.program { return program }
        let program = try CPUProgram(self)
        compiled.program = program
        return program
    }

    private func cachedGPUKernel() throws -> (PerElementKernel, [Float], [[Float]]) {
        compiled.lock.lock(); defer { compiled.lock.unlock() }
        if let kernel = compiled.kernel { return kernel }
        let kernel = try gpuKernel()
        compiled.kernel = kernel
        return kernel
    }

    /// The GLSL kernel: one function per stage, applied in order; scalars
    /// become `param(i)` and per-channel values `weight(k)`.
    func gpuKernel() throws -> (PerElementKernel, [Float], [[Float]]) {
        var parameters: [Float] = []
        var weights: [[Float]] = []
        var functions: [String] = []
        for (index, stage) in stages.enumerated() {
            var slots: [String: String] = [:]
            for name in stage.formula.valueNames {
                if let values = stage.channelValues[name] {
                    slots[name] = "weight(\(weights.count))"
                    weights.append(values)
                } else if let value = stage.scalars[name] {
                    slots[name] = "param(\(parameters.count))"
                    parameters.append(value)
                }
            }
            functions.append("vec4 lk_stage\(index)(vec4 x) { precise vec4 y = \(try stage.formula.glsl(slots: slots)); return y; }")
        }
        guard parameters.count <= PerElementKernel.maxParameters else {
            throw LayerKitError.invalidParameter(
                "\(name): \(parameters.count) scalar parameters, the GPU kernel takes at most \(PerElementKernel.maxParameters)")
        }
        let body = stages.indices.reduce("x") { "lk_stage\($1)(\($0))" }
        return (PerElementKernel(name: name, body: body, functions: functions.joined(separator: " ")), parameters, weights)
    }
}
