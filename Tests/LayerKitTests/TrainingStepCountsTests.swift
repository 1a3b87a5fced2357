import Foundation
import Testing
@testable import LayerKit

/// What a training step costs beside its arithmetic (`TrainingStepCounts`,
/// `GPUCounts`): a GPU step after the first creates no image or buffer
/// (the context's pools serve the images and buffers of the step before),
/// while every step still moves bytes; the counters themselves count each
/// creation and transfer.
@Suite struct TrainingStepCountsTests {
    /// The 20 Adam steps of the fixture on `backend`, each step's counts.
    static func stepCounts(backend: Backend, trainable: TrainableSelection = .all) throws -> [TrainingStepCounts] {
        try steps(backend: backend, trainable: trainable).counts
    }

    /// The 20 Adam steps of the fixture (swish_net, batches of 4) on
    /// `backend`, training `trainable`: each step's counts and loss.
    /// `layerByLayer`: the forward pass through one-layer plans, as the fp16
    /// twin runs it (`TrainingPass.roundsValuesToHalf`), the way every GPU
    /// step ran before the one-plan forward pass.
    /// `uploadsWeights`: remade layers upload their GPU weights again, as
    /// before their forms were re-derived from the optimizer's buffer.
    static func steps(backend: Backend, trainable: TrainableSelection, layerByLayer: Bool = false,
                      uploadsWeights: Bool = false) throws -> (counts: [TrainingStepCounts], losses: [Double]) {
        var counts: [TrainingStepCounts] = []
        var losses: [Double] = []
        let data = try ArrayBatchProvider(inputs: TrainingNetworkTests.fixture("adam_x.npy"),
                                          targets: TrainingNetworkTests.fixture("adam_labels.npy"))
        let configuration = TrainingConfiguration(loss: .crossEntropy, optimizer: .adam(learningRate: 0.01), epochs: 5,
                                                  batchSize: 4, shuffles: false, trainable: trainable)
        var task: UpdateTask?
        task = try UpdateTask(modelAt: TrainingNetworkTests.directory.appendingPathComponent("swish_net.onnx"),
                              data: data, configuration: configuration, backend: backend) { event in
            guard case .miniBatchEnded(_, _, let loss) = event, let step = task?.lastStep else { return }
            counts.append(step)
            losses.append(loss)
        }
        task?.pass.roundsValuesToHalf = layerByLayer
        task?.pass.refreshesWeightFormsOnDevice = !uploadsWeights
        try task?.run()
        return (counts, losses)
    }

    /// The bytes moving a tensor of `shape` counts: its slice image's, 8 a
    /// texel (4 fp16 channels), `Tensor.nchwShape`'s batch x slices x height x width.
    static func imageBytes(_ shape: [Int]) throws -> Int {
        let s = try Tensor.nchwShape(shape)
        return s[0] * ((s[1] + 3) / 4) * s[2] * s[3] * 8
    }

    /// A fine-tune of the head (fc) on the frozen Conv, Swish and pool: the
    /// forward pass runs as one plan, so after the first step a step uploads
    /// the batch and the gradients (the parameters stay in the optimizer's
    /// buffer, and the Gemm's GPU weights are re-derived from it on the
    /// device), and downloads what the loss and fc's backward read (fc's
    /// input and the logits) and the parameters (for the host's layers);
    /// the frozen layers' activations stay on the device. Exactly: a bound
    /// one weight upload would break. With the Gemm's weights uploaded again
    /// (as before) the losses have the same bits and each step uploads 8
    /// padded rows of 65 more. Layer by layer (one plan each, as before the
    /// one-plan forward pass) the same steps move every activation both
    /// ways, past these counts: the negative control. The losses follow the
    /// CPU's as the whole network's do.
    @Test func aHeadFineTuneMovesTheBatchAndWhatTheHeadReads() throws {
        guard TestGPU.isEnabled else { return }
        let context = try GPUContext(device: TestGPU.get().device)
        let backend = try Backend(computeUnits: .gpu, context: context, timestamps: false, notice: { _ in })
        let (steps, losses) = try Self.steps(backend: backend, trainable: .lastLayers(1))
        let cpuLosses = try Self.steps(backend: TrainingNetworkTests.cpu, trainable: .lastLayers(1)).losses
        let gpu = steps.compactMap(\.gpu)
        #expect(gpu.count == 20 && losses.count == 20)
        // fc.weight (5 x 64) and fc.bias (5) as Float32: the optimizer uploads the gradients and downloads the
        // parameters (its moments and the parameters stay on the GPU).
        let parameterBytes = (5 * 64 + 5) * 4
        let up = try Self.imageBytes([4, 3, 8, 8]) + parameterBytes
        let down = try Self.imageBytes([4, 64]) + Self.imageBytes([4, 5]) + parameterBytes
        print("head fine-tune: step 1: \(gpu[0]); step 20: \(gpu[19]) (\(gpu[19].bytesUploaded) B up, "
              + "\(gpu[19].bytesDownloaded) B down; expected \(up), \(down))")
        for (i, counts) in gpu.enumerated().dropFirst() {
            #expect(counts.allocations == 0, "step \(i + 1): \(counts)")
            #expect(counts.bytesUploaded == up && counts.bytesDownloaded == down,
                    "step \(i + 1): \(counts.bytesUploaded) B up, \(counts.bytesDownloaded) B down; expected \(up), \(down)")
        }
        for (step, (g, c)) in zip(losses, cpuLosses).enumerated() {
            #expect(abs(g - c) <= 1e-3, "step \(step): GPU \(g), CPU \(c)")
        }
        // The Gemm's weight form uploaded again instead: the same losses, to the bit, and its 8 rows of 65 more.
        let uploaded = try Self.steps(backend: backend, trainable: .lastLayers(1), uploadsWeights: true)
        #expect(uploaded.losses.map(\.bitPattern) == losses.map(\.bitPattern))
        for (i, counts) in uploaded.counts.compactMap(\.gpu).enumerated().dropFirst() {
            #expect(counts.bytesUploaded == up + 8 * 65 * 4 && counts.bytesDownloaded == down, "step \(i + 1): \(counts)")
        }
        let layerByLayer = try Self.steps(backend: backend, trainable: .lastLayers(1), layerByLayer: true).counts
        let last = try #require(layerByLayer.last?.gpu)
        print("head fine-tune layer by layer: step 20: \(last.bytesUploaded) B up, \(last.bytesDownloaded) B down")
        #expect(last.bytesUploaded > up && last.bytesDownloaded > down)
    }

    @Test func onTheGPUOnlyTheFirstStepAllocates() throws {
        guard TestGPU.isEnabled else { return }
        // A context of its own, so other tests' work does not move its counts.
        let context = try GPUContext(device: TestGPU.get().device)
        let backend = try Backend(computeUnits: .gpu, context: context, timestamps: false, notice: { _ in })
        let (steps, losses) = try Self.steps(backend: backend, trainable: .all)
        #expect(steps.map(\.step) == Array(0..<20))
        // Every parameter trains: the GPU's losses follow the CPU twin's step after step.
        let cpuLosses = try Self.steps(backend: TrainingNetworkTests.cpu, trainable: .all).losses
        #expect(losses.count == 20 && cpuLosses.count == 20)
        for (step, (g, c)) in zip(losses, cpuLosses).enumerated() {
            #expect(abs(g - c) <= 1e-3, "step \(step): GPU \(g), CPU \(c)")
        }
        // The Conv's and the Gemm's weight forms re-derived on the device hold what an upload would: the same
        // losses, to the bit, as when they are uploaded again, which moves more bytes every step.
        let uploaded = try Self.steps(backend: backend, trainable: .all, uploadsWeights: true)
        #expect(uploaded.losses.map(\.bitPattern) == losses.map(\.bitPattern))
        let gpu = steps.compactMap(\.gpu)
        for (i, (kept, again)) in zip(gpu, uploaded.counts.compactMap(\.gpu)).enumerated().dropFirst() {
            #expect(kept.bytesUploaded < again.bytesUploaded, "step \(i + 1): \(kept) kept, \(again) uploaded")
        }
        #expect(gpu.count == 20)
        for (i, counts) in gpu.enumerated() { print("step \(i + 1): \(counts)") }
        #expect(gpu[0].imagesCreated > 0 && gpu[0].buffersCreated > 0, "the first step makes its images and buffers")
        for (i, counts) in gpu.enumerated().dropFirst() {
            #expect(counts.allocations == 0, "step \(i + 1): \(counts)")
        }
        // Every step still uploads its batch and downloads what the loss and the CPU work read.
        #expect(gpu.allSatisfy { $0.bytesUploaded > 0 && $0.bytesDownloaded > 0 })
        #expect(steps.allSatisfy { $0.seconds > 0 })

        // The negative control, and the figures before the pools: without them every step allocates again.
        let unpooled = try GPUContext(device: TestGPU.get().device, idleResourceBytes: 0)
        let before = try Self.stepCounts(backend: Backend(computeUnits: .gpu, context: unpooled, timestamps: false,
                                                          notice: { _ in })).compactMap(\.gpu)
        print("without the pools: step 1: \(before[0]); step 20: \(before[19])")
        let median = { (steps: [TrainingStepCounts]) in steps.dropFirst().map(\.seconds).sorted()[steps.count / 2 - 1] * 1e3 }
        print(String(format: "median step 2..20: %.2f ms with the pools, %.2f ms without", median(steps),
                     median(try Self.stepCounts(backend: Backend(computeUnits: .gpu, context: unpooled, timestamps: false,
                                                                 notice: { _ in })))))
        #expect(before.count == 20 && before.dropFirst().allSatisfy { $0.imagesCreated > 0 })
    }

    @Test func onTheCPUThereAreNoGPUCounts() throws {
        let steps = try Self.stepCounts(backend: TrainingNetworkTests.cpu)
        #expect(steps.count == 20 && steps.allSatisfy { $0.gpu == nil && $0.seconds > 0 })
    }

    @Test func theCountersCountCreationsAndTransfers() throws {
        guard TestGPU.isEnabled else { return }
        let context = try GPUContext(device: TestGPU.get().device)
        let start = context.counts
        let tensor = try Tensor(shape: [2, 6, 3, 5], values: (0..<180).map { Float($0) })
        // 2 x 2 slices x 3 x 5 texels of 8 bytes.
        let texelBytes = 2 * 2 * 3 * 5 * 8
        var first: SliceImage? = try context.upload(tensor)
        let second = try context.upload(tensor)  // the first is alive: a new image
        var counts = context.counts - start
        #expect(counts.imagesCreated == 2 && counts.bytesUploaded == 2 * texelBytes)
        #expect(counts.buffersCreated == 1, "one staging buffer serves both uploads")
        _ = try context.download(second)
        first = nil
        _ = try context.upload(tensor)  // the first's image is reused
        counts = context.counts - start
        #expect(counts.imagesCreated == 2 && counts.bytesDownloaded == texelBytes && counts.bytesUploaded == 3 * texelBytes)
        // Another extent is a new image; a buffer of weights is a new buffer, and its floats are uploaded.
        _ = try context.upload(Tensor(shape: [1, 6, 3, 5]))
        var weights: GPUBuffer? = try context.makeBuffer(floats: [1, 2, 3])
        counts = context.counts - start
        #expect(counts.imagesCreated == 3 && counts.buffersCreated == 3)
        #expect(counts.bytesUploaded == 3 * texelBytes + texelBytes / 2 + 12)
        weights = nil
        let again = try context.makeBuffer(floats: [4, 5, 6])  // the given-back buffer serves
        #expect((context.counts - start).buffersCreated == 3)
        #expect(try OptimizerBuffers.floats(again).map { $0 } == [4, 5, 6])
        #expect(first == nil && weights == nil)
    }
}
