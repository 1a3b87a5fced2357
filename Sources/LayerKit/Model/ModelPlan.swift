/// A `ModelGraph` made ready to run on a backend: where each step runs, and
/// for values that live on the GPU, which slice image holds them.
///
/// Images are assigned by liveness, as ncnn's and Core ML's allocators do:
/// an image is taken when its value is first needed on the GPU and given
/// back after its last use (a CPU step that downloads it counts), so values
/// whose lifetimes do not overlap share one image (of the same shape). The
/// images are made on the first run and kept for every later run; constants
/// keep theirs and are uploaded once.
final class ModelPlan {
    let graph: ModelGraph
    /// Per step: where it runs (steps without work: `.cpu(reason: nil)`).
    let placements: [Placement]
    /// Per step: why it runs on the CPU although the GPU was allowed, if so.
    let cpuReasons: [String?]
    /// Per value: the image slot it lives in on the GPU, nil if never there.
    let slots: [Int?]
    /// Per slot: its NCHW image shape.
    let slotShapes: [[Int]]
    /// Per value: the last step that reads it (see `ModelGraph.lastUses`).
    let lastUses: [Int]
    /// The slot images, made on the first GPU run.
    var images: [SliceImage] = []
    /// Whether the constants' images hold their data yet.
    var constantsUploaded = false

    init(graph: ModelGraph, backend: Backend) throws {
        self.graph = graph
        lastUses = graph.lastUses()
        cpuReasons = try graph.steps.map { try ModelPlan.whyNotGPU($0, in: graph, backend: backend) }
        placements = zip(graph.steps, cpuReasons).map { step, why in
            if step.layer == nil || backend.computeUnits == .cpuOnly { return .cpu(reason: nil) }
            return why.map { .cpu(reason: "\(step.name) (\(step.opType)) runs on the CPU: \($0)") } ?? .gpu
        }

        // The first and last step that needs each value's image.
        let count = graph.values.count
        var first = Array(repeating: Int.max, count: count)
        var last = Array(repeating: -1, count: count)
        var madeOnGPU = Array(repeating: false, count: count)
        for (i, step) in graph.steps.enumerated() where step.layer != nil {
            if placements[i].isGPU {
                for v in step.inputs + step.outputs { first[v] = min(first[v], i); last[v] = max(last[v], i) }
                for v in step.outputs { madeOnGPU[v] = true }
            } else {
                for v in step.inputs where madeOnGPU[v] { last[v] = max(last[v], i) }
            }
        }
        for v in graph.outputs where madeOnGPU[v] { last[v] = Int.max }
        for v in 0..<count where graph.values[v].constant != nil { last[v] = Int.max }

        var slots = [Int?](repeating: nil, count: count)
        var slotShapes: [[Int]] = []
        var free: [[Int]: [Int]] = [:]
        for (i, step) in graph.steps.enumerated() {
            // Outputs are taken before anything is given back, so a step
            // never writes the image it reads.
            for v in step.inputs + step.outputs where first[v] == i && slots[v] == nil {
                let shape = try SliceImage.imageShape(forTensorShape: graph.values[v].shape)
                if let slot = free[shape]?.popLast() {
                    slots[v] = slot
                } else {
                    slots[v] = slotShapes.count
                    slotShapes.append(shape)
                }
            }
            for v in Set(step.inputs + step.outputs) where last[v] == i {
                if let slot = slots[v] { free[slotShapes[slot], default: []].append(slot) }
            }
        }
        self.slots = slots
        self.slotShapes = slotShapes
    }

    /// Why `step` runs on the CPU although the backend allows the GPU: the
    /// backend's reason for its layer, or one of its tensors past the
    /// device's image limits; nil when it runs on the GPU (or does no work).
    private static func whyNotGPU(_ step: ModelGraph.Step, in graph: ModelGraph, backend: Backend) throws -> String? {
        guard let layer = step.layer, backend.computeUnits != .cpuOnly else { return nil }
        if let why = backend.whyNotGPU(layer) { return why }
        guard let gpu = backend.gpu else { return nil }
        for v in step.inputs + step.outputs {
            let shape = graph.values[v].shape
            if try !gpu.fitsOneImage(shape: SliceImage.imageShape(forTensorShape: shape)) {
                return "its \(Tensor.describe(shape)) tensor exceeds the device's image limits"
            }
        }
        return nil
    }

    /// The plan's images on `gpu`, made on first use.
    func slotImages(on gpu: GPUContext) throws -> [SliceImage] {
        if images.isEmpty { images = try slotShapes.map { try gpu.makeSliceImage(shape: $0) } }
        return images
    }
}
