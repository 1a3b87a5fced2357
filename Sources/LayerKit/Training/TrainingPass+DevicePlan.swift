import Foundation

/// The forward pass as one plan on the GPU: every step of the training
/// graph in one `ModelPlan`, so a value one GPU layer makes and the next
/// reads stays in its slice image, and only what the loss and the backward
/// pass read comes back to the host. A layer run through its own plan
/// (`Backend.run`) uploads its inputs and downloads its outputs: for a
/// fine-tune of a head on a frozen backbone that was every activation of
/// the backbone, up and down, every step.
extension TrainingPass {
    /// Whether the forward pass runs as one plan: on a backend with a GPU,
    /// when no value is computed as a typed tensor (which a training graph
    /// does not hold in practice) and the fp16 twin is not asked for (it
    /// rounds every value on the host between layers).
    func runsForwardAsOnePlan(_ graph: ModelGraph) -> Bool {
        guard backend.gpu != nil, backend.computeUnits != .cpuOnly, !roundsValuesToHalf else { return false }
        return !graph.values.contains { $0.isTyped && $0.constant == nil }
    }

    /// Runs `graph` with `layers` in place of its steps' (the current
    /// parameters, BatchNormalization's training form) and `constants` in
    /// place of its trained graph constants, as one plan; returns the values
    /// of `read` (each computed value the caller reads, by index), which are
    /// the plan's outputs, downloaded; every other value stays on the device.
    /// Each step's placement is recorded as forward work, the plan's time
    /// shared equally among its layers (one submission runs them all).
    func forwardOnOnePlan(_ graph: ModelGraph, layers: [Layer?], constants: [Int: Tensor], input: Tensor,
                          read: [Int]) throws -> [Int: Tensor] {
        var planned = graph
        for (v, tensor) in constants {
            let value = graph.values[v]
            planned.values[v] = ModelGraph.Value(name: value.name, shape: value.shape, constant: tensor,
                                                 elementType: value.elementType, isContainer: value.isContainer)
        }
        planned.steps = zip(graph.steps, layers).map { step, layer in
            ModelGraph.Step(name: step.name, opType: step.opType, domain: step.domain, layer: layer,
                            inputs: step.inputs, outputs: step.outputs)
        }
        planned.outputs = read
        planned.knownOutputs = [:]
        let start = ContinuousClock.now
        let plan = try ModelPlan(graph: planned, backend: backend, inputRanges: backend.halfRanges(of: [input]))
        backend.announce(plan)
        let run = ModelRun(plan: plan, gpu: backend.gpu, inputs: [input], profiler: nil)
        let outputs = try CPUThreads.with(backend.threads) { try run.run() }
        let layerSteps = planned.steps.indices.filter { planned.steps[$0].layer != nil }
        let share = (ContinuousClock.now - start).inSeconds / Double(max(1, layerSteps.count))
        for i in layerSteps {
            runner.currentOp = planned.steps[i].label
            runner.record("forward", plan.placements[i], seconds: share)
        }
        return Dictionary(uniqueKeysWithValues: zip(read, outputs))
    }
}
